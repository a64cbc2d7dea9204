package audit

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/cdc-relay/cdc-relay/backfill"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Defaults of Config.
const (
	// DefaultRowRate and DefaultRecordRate are the reads' paces: a
	// million rows in under a minute, without taking over a busy server.
	DefaultRowRate    = 20000
	DefaultRecordRate = 20000
	// DefaultBatch is the rows one fetch of the cursor reads.
	DefaultBatch = 5000
	// DefaultMargin widens the time window on Kafka's side: a record's
	// timestamp is its row's, and a partition's records are in commit
	// order, not timestamp order.
	DefaultMargin = 5 * time.Minute
	// DefaultLimit is how many findings of each kind a result lists.
	DefaultLimit = 1000
)

// Config says what to audit and how.
type Config struct {
	// PostgresURL is the database of the table; Mapping the table's
	// mapping, the relay's; Kafka the brokers and how to reach them.
	PostgresURL string
	Mapping     decoder.Mapping
	Kafka       sink.Config
	// Since and Until select the rows whose timestamp column is within
	// [Since, Until) (zero: no bound), and Kafka's records from Since
	// less Margin to Until plus Margin.
	Since, Until time.Time
	Margin       time.Duration
	// FromID and ToID select the rows whose id column is within
	// [FromID, ToID], compared as the column's type (empty: no bound).
	FromID, ToID string
	// OrderColumn is the column read as commit order: empty for the
	// primary key when it is one integer column (else no order check),
	// OrderNone for no order check.
	OrderColumn string
	// KafkaSends, if set, reports whether the table's events of topic go
	// to Kafka (a config file's table or route may send them to a webhook
	// publisher only): a row is expected on the topics it reports, the
	// others are not read. Nil: every topic goes to Kafka.
	KafkaSends func(topic string) bool
	// Topics are topics to read beside those the rows go to, where a
	// record on the wrong topic may be.
	Topics []string
	// RowRate and RecordRate bound the reads, a second (0: no bound);
	// Batch is the rows a fetch reads.
	RowRate, RecordRate float64
	Batch               int
	// Limit is how many findings of each kind the result lists (0: all).
	Limit int
	// Progress, if set, is told how far the audit has gone, after each
	// fetch.
	Progress func(backfill.Progress)
	Logger   *slog.Logger
}

// RowReader reads the rows to audit: the seam of PostgreSQL.
type RowReader interface {
	// ReadRows hands each row to add.
	ReadRows(ctx context.Context, add func(Row)) error
}

// estimator is a RowReader that can tell about how many rows a whole
// table has, for the ledger to make room for them at once.
type estimator interface {
	Estimate(ctx context.Context) int
}

// RecordReader reads the records of topics: the seam of Kafka.
type RecordReader interface {
	// ReadRecords reads the records of topics, telling r what it finds.
	ReadRecords(ctx context.Context, topics []string, r Reads) error
}

// Reads is what a RecordReader tells as it reads.
type Reads struct {
	// Absent is told each topic that does not exist.
	Absent func(topic string)
	// Total is told the number of offsets it will read, once known.
	Total func(n int64)
	// See is handed each record, each partition's in offset order.
	See func(Record)
}

// Run audits the table Config names: it reads its rows, then the
// records of their topics, and returns what it found. An error is a
// failure to read (a connection, a privilege), never a finding.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	table := cfg.Mapping.Schema + "." + cfg.Mapping.Table
	if cfg.Mapping.IDColumn == "" {
		return Result{Table: table}, errors.New("the table's mapping has no id column: the audit matches records to rows by their id header; set --id-column (id_column in the config file)")
	}
	rows, err := openRows(ctx, cfg)
	if err != nil {
		return Result{Table: table}, err
	}
	defer rows.close()
	res, err := Check(ctx, cfg, rows, newTopicRecords(cfg), func() string { return rows.order })
	res.Table = table
	return res, err
}

// Check is the audit over its seams: every row of rows, then every
// record of the rows' topics (and Config.Topics) of records; order, read
// once the rows are, names the order column ("" for none).
func Check(ctx context.Context, cfg Config, rows RowReader, records RecordReader, order func() string) (Result, error) {
	cfg = cfg.withDefaults()
	table := cfg.Mapping.Schema + "." + cfg.Mapping.Table
	l := NewLedger(cfg.Limit)
	p := backfill.Progress{Table: table + " rows", Started: time.Now()}
	tell := func(force bool) {
		if cfg.Progress != nil && (force || p.Rows%int64(cfg.Batch) == 0) {
			p.Now = time.Now()
			cfg.Progress(p)
		}
	}
	if e, ok := rows.(estimator); ok && cfg.Since.IsZero() && cfg.Until.IsZero() && cfg.FromID == "" && cfg.ToID == "" {
		n := e.Estimate(ctx)
		l.Reserve(n)
		p.Total = int64(n) // the progress bar's end: an estimate
	}
	var elsewhere int64
	err := rows.ReadRows(ctx, func(r Row) {
		if cfg.KafkaSends != nil && r.Poison == "" && len(r.Topics) > 0 {
			kafka := slices.DeleteFunc(slices.Clone(r.Topics), func(t string) bool { return !cfg.KafkaSends(t) })
			if len(kafka) == 0 {
				elsewhere++
			}
			r.Topics = kafka
		}
		l.Add(r)
		p.Rows++
		tell(false)
	})
	if err != nil {
		return Result{Table: table}, err
	}
	tell(true)
	l.Seal()
	topics := l.Topics()
	for _, t := range cfg.Topics {
		if !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	p = backfill.Progress{Table: table + " records", Started: time.Now()}
	var absent []string
	err = records.ReadRecords(ctx, topics, Reads{
		Absent: func(t string) { absent = append(absent, t) },
		Total:  func(n int64) { p.Total = n },
		See: func(r Record) {
			l.See(r)
			p.Rows++
			tell(false)
		},
	})
	if err != nil {
		return Result{Table: table}, err
	}
	tell(true)
	res := l.Result(order())
	res.Table = table
	res.Elsewhere = elsewhere
	res.Unrouted -= elsewhere
	slices.Sort(absent)
	res.TopicsAbsent = slices.Compact(absent)
	return res, nil
}

// withDefaults fills what cfg left unset.
func (cfg Config) withDefaults() Config {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Margin == 0 {
		cfg.Margin = DefaultMargin
	}
	return cfg
}
