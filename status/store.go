package status

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// DB is what the store needs of a connection pool (*pgxpool.Pool and
// *pgx.Conn have it): Exec and QueryRow, and Query and Begin.
type DB interface {
	pgdb.Querier
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store reads and writes the status table. It is safe for concurrent use
// when its DB is (a pool).
type Store struct {
	db    DB
	table string // quoted
	// sources names the outbox tables by decoder.Event.Table; see
	// SourceTables.
	sources []string
	rows    OutboxRows // see WriteBack; noWriteBack by default
	shared  []string   // see SharedWriteBack
	// pauses is the pause table, quoted, and slot the slot whose pauses
	// the store reads and writes; see Pauses. "" without.
	pauses, slot string
	pausedBy     []string // see PausedBy
	// publisher is the publisher whose rows the store reads and writes,
	// and publisherSQL its name as an SQL literal; see Publisher.
	publisher, publisherSQL string
	unordered               bool     // see Unordered
	byTopic                 bool     // see ByTopic
	topics                  []string // see ByTopics
	// outcomeTimeout bounds writing a claim's outcomes once its delivery
	// ended (defaultOutcomeTimeout; tests shorten it).
	outcomeTimeout time.Duration
	claimBytes     int64 // see ClaimBytes; 0 is no bound
}

// Option configures a Store; see NewStore.
type Option func(*Store)

// SourceTables gives the store the relay's outbox tables, in the order of
// the decoder's mappings (decoder.Event.Table indexes them), each as
// schema.name, plain, not quoted as an identifier: public.outbox. Failed
// and Dead record the name of the parked event's table in the row's
// source_table. Without it, or for an event whose Table has no name
// here (an index out of range, or ""), source_table is NULL, as in the
// rows parked before the column existed.
func SourceTables(names ...string) Option {
	names = slices.Clone(names)
	return func(s *Store) { s.sources = names }
}

// WriteBack makes the store write what becomes of each parked event to
// its outbox row, when the row's table writes back (rows knows which, by
// the status table's source_table): parked as FAILED or DEAD, delivered or
// failed again or given up by the poller, retried or purged by an
// operator. Each row is written in the same transaction as the status
// table, so the two never disagree, and the later outcome is the one the
// row keeps. A row that refuses its outcome is logged and left as it was
// (writeback.Rows); the status table changes all the same. A nil rows
// writes no outbox row.
func WriteBack(rows OutboxRows) Option {
	return func(s *Store) {
		if rows != nil {
			s.rows = rows
		}
	}
}

// ClaimBytes bounds what one Claim holds in memory: it takes rows, in
// the order it claims them, while their records (key, value and headers,
// as stored) come to at most n bytes, and always one. The rows past the
// bound are neither read nor locked, and wait for the next claim. n <= 0
// is no bound.
func ClaimBytes(n int64) Option {
	return func(s *Store) { s.claimBytes = n }
}

// OutboxRows writes what becomes of parked events to their outbox rows,
// one row or one table's set at a time, in the status table's transaction
// (*writeback.Rows has it, and a nil *writeback.Rows writes none).
type OutboxRows interface {
	// Writes reports whether the outbox table named sourceTable
	// (schema.name, as source_table records it) writes back.
	Writes(sourceTable string) bool
	// Write makes the row with id of sourceTable say o, in tx. It returns
	// an error only for one the caller's transaction must roll back on;
	// a row that refuses o is left as it was.
	Write(ctx context.Context, tx pgdb.Tx, sourceTable, id string, o outboxrow.Outcome) error
	// WriteMany makes each row of sourceTable say its outcome, in tx, as
	// Write one after another would: each row that refuses its outcome
	// is left as it was, and only an error the caller's transaction must
	// roll back on is returned.
	WriteMany(ctx context.Context, tx pgdb.Tx, sourceTable string, outs []outboxrow.RowOutcome) error
	// Resets reports whether sourceTable writes back and lists pending
	// values: its rows may be reset by a runbook (its reset trigger).
	Resets(sourceTable string) bool
	// Lock locks the rows of sourceTable whose ids are ids, in tx, as an
	// UPDATE of them would, waiting for a transaction that changed one and
	// has not ended.
	Lock(ctx context.Context, tx pgdb.Tx, sourceTable string, ids []string) error
}

// noWriteBack is the OutboxRows of a store without WriteBack: no table
// writes back.
type noWriteBack struct{}

func (noWriteBack) Writes(string) bool { return false }

func (noWriteBack) Write(context.Context, pgdb.Tx, string, string, outboxrow.Outcome) error {
	return nil
}

func (noWriteBack) WriteMany(context.Context, pgdb.Tx, string, []outboxrow.RowOutcome) error {
	return nil
}

func (noWriteBack) Resets(string) bool { return false }

func (noWriteBack) Lock(context.Context, pgdb.Tx, string, []string) error { return nil }

// NewStore returns a store on schema.table, configured by opts: Kafka's
// (KafkaPublisher) unless Publisher names another.
func NewStore(db DB, schema, table string, opts ...Option) *Store {
	s := &Store{db: db, table: pgx.Identifier{schema, table}.Sanitize(), rows: noWriteBack{}, outcomeTimeout: defaultOutcomeTimeout}
	Publisher(KafkaPublisher)(s)
	for _, o := range opts {
		o(s)
	}
	s.shareRows()
	return s
}

// sourceTable is the name source_table records for an event of table i,
// or nil (NULL) when the store has none.
func (s *Store) sourceTable(i int) any {
	if i < 0 || i >= len(s.sources) || s.sources[i] == "" {
		return nil
	}
	return s.sources[i]
}

// The states of a row.
const (
	// Failed rows wait for the poller (or an operator).
	Failed = "FAILED"
	// Delivered rows were re-delivered; retention deletes them in time.
	Delivered = "DELIVERED"
	// Dead rows failed every attempt, or cannot become their record, or
	// were skipped by an operator; an operator may retry them. A Dead row
	// that was not skipped holds its key's later events behind it.
	Dead = "DEAD"
	// Waiting rows are parked behind an earlier held row of their topic
	// and key; they count no attempt, and are delivered, in order, once
	// every earlier held row of their key is delivered, purged or skipped.
	Waiting = "WAITING"
	// Paused rows are parked because their topic was paused; they count no
	// attempt, and are delivered once it is resumed, in order.
	Paused = "PAUSED"
)

// Row is one row of the status table: an event the fast path could not
// deliver, with a copy of its record.
type Row struct {
	ID            int64
	EventID       string // "" when the event had none
	SourceTable   string // the event's outbox table, schema.name (see SourceTables); "" for NULL
	Topic         string
	Key, Value    []byte
	Headers       []decoder.Header
	Timestamp     time.Time // zero when not stored
	Status        string    // Failed, Delivered, Dead, Waiting or Paused
	Attempts      int       // failed delivery attempts by the poller
	LastError     string
	NextAttemptAt time.Time
	CommitLSN     pglogrepl.LSN // the commit of the event's transaction
	CreatedAt     time.Time
	UpdatedAt     time.Time
	DeliveredAt   time.Time // zero unless Delivered
	// Reload: the event is to be sent as its outbox row is now (a reset
	// of the row, a row adopted at the switch-over): each attempt reads
	// it; the record fields hold what the last attempt read (empty before
	// the first, Outcome.Loaded).
	Reload bool
	// WaitsFor, filled by List and Get, is the id of the first held row
	// of the row's topic and key when this held row comes after it (the
	// event it waits for); 0 when none.
	WaitsFor int64
	// Skipped is when an operator skipped the row (see Store.Skip); zero
	// when not.
	Skipped time.Time
	// OriginalTopic is the topic the event was parked for when an
	// operator corrected it (RetryOptions.Topic); Topic is then the
	// corrected one. "" when the topic was never corrected.
	OriginalTopic string
	// Publisher is the publisher the event was parked for (see
	// Publisher): the store's own, since a store reads no other's rows.
	Publisher string
	// Partition is the partition the event's record goes to when Placed
	// (decoder.Event.Placed: its table's partition column); otherwise the
	// producer picks it by the key's hash.
	Partition int32
	Placed    bool
}

// rowColumns are the columns scanRow reads, in its order.
const rowColumns = `id, coalesce(event_id, ''), coalesce(source_table, ''), topic, record_key, record_value, headers, record_timestamp,
	status, attempts, last_error, next_attempt_at, coalesce(commit_lsn::text, '0/0'), created_at, updated_at, delivered_at, reload, skipped_at,
	coalesce(original_topic, ''), record_partition`

// Bytes is what r's record holds in memory: its key, value and headers.
func (r *Row) Bytes() int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// scanRow reads one Row selected with rowColumns.
func scanRow(r pgx.CollectableRow) (Row, error) {
	return scanRowWith(r)
}

// scanRowWith reads one Row selected with rowColumns, then the further
// columns into extra.
func scanRowWith(r pgx.CollectableRow, extra ...any) (Row, error) {
	var (
		row           Row
		headers       []byte
		ts, delivered *time.Time
		skipped       *time.Time
		commitLSN     string
		partition     *int32
	)
	err := r.Scan(append([]any{&row.ID, &row.EventID, &row.SourceTable, &row.Topic, &row.Key, &row.Value, &headers, &ts,
		&row.Status, &row.Attempts, &row.LastError, &row.NextAttemptAt, &commitLSN, &row.CreatedAt, &row.UpdatedAt, &delivered, &row.Reload, &skipped, &row.OriginalTopic, &partition}, extra...)...)
	if err != nil {
		return row, err
	}
	if partition != nil {
		row.Partition, row.Placed = *partition, true
	}
	if ts != nil {
		row.Timestamp = *ts
	}
	if delivered != nil {
		row.DeliveredAt = *delivered
	}
	if skipped != nil {
		row.Skipped = *skipped
	}
	if row.CommitLSN, err = pglogrepl.ParseLSN(commitLSN); err != nil {
		return row, fmt.Errorf("status row %d: commit_lsn %q: %w", row.ID, commitLSN, err)
	}
	if row.Headers, err = decodeHeaders(headers); err != nil {
		return row, fmt.Errorf("status row %d: headers: %w", row.ID, err)
	}
	return row, nil
}

// decodeHeaders reads what encodeHeaders wrote.
func decodeHeaders(b []byte) ([]decoder.Header, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var hs []struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	}
	if err := json.Unmarshal(b, &hs); err != nil {
		return nil, err
	}
	out := make([]decoder.Header, len(hs))
	for i, h := range hs {
		out[i].Key = h.Key
		if h.Value != nil {
			out[i].Value = []byte(*h.Value)
		}
	}
	return out, nil
}
