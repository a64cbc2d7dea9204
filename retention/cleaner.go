package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/tick"
)

// DB is what a Cleaner needs of a connection pool (*pgxpool.Pool has it;
// so does *pgx.Conn, for one goroutine at a time): Exec and QueryRow.
type DB = pgdb.DB

// Options names the tables a Cleaner works on, and configures it.
type Options struct {
	// OutboxSchema and OutboxTable name the outbox table.
	OutboxSchema, OutboxTable string
	// TimestampColumn is the outbox table's mapped timestamp column
	// (decoder.Mapping.TimestampColumn): timestamptz, timestamp (read as
	// wall time in TimeZone) or bigint: the time since the epoch in
	// TimestampUnit. Empty, or a column the table does not have, disables
	// outbox retention.
	TimestampColumn string
	// TimeZone is the IANA zone a timestamp without time zone is read in
	// (decoder.Mapping.TimeZone); "" is UTC.
	TimeZone string
	// TimestampUnit is the unit of a bigint TimestampColumn; unset, the
	// first cleanup judges it by the column's newest value
	// (decoder.JudgeUnit), and disables outbox retention when it cannot.
	TimestampUnit decoder.TimestampUnit
	// StatusSchema and StatusTable name the status table.
	StatusSchema, StatusTable string
	// IDColumn is the outbox table's id column and SourceTable its name
	// as the status table records it (source_table: schema.name, plain).
	// With both set, an outbox row whose event the poller is still to
	// send (a FAILED, WAITING or PAUSED status row for its id: an adopted
	// or reset row, read again from the outbox row at each attempt) is
	// never deleted, whatever its age. With either empty, or an id column
	// the table lacks, rows are deleted by age alone.
	IDColumn, SourceTable string
	// Config is the retention periods, the interval, the batch size and
	// the logger.
	Config Config
}

// Result says what one cleanup did.
type Result struct {
	// OutboxRows and StatusRows are the rows deleted from each table.
	OutboxRows, StatusRows int64
	// Statements is the number of DELETE statements run (the look-ups
	// that precede them are not counted).
	Statements int
	// Longest is the duration of the slowest DELETE statement.
	Longest time.Duration
	// Elapsed is the duration of the whole cleanup.
	Elapsed time.Duration
}

// Deleted is the number of rows deleted from both tables.
func (r Result) Deleted() int64 { return r.OutboxRows + r.StatusRows }

// Timestamp column types the relay supports, by type oid (as the decoder
// accepts them).
const (
	oidInt8        = 20
	oidTimestamp   = 1114
	oidTimestamptz = 1184
)

// Cleaner deletes old outbox rows and old DELIVERED and DEAD status rows.
//
// Every DELETE removes at most Config.BatchRows rows and runs in its own
// transaction, so none holds locks, or keeps a large transaction open,
// for long. A batch is chosen by the retention condition alone, as
//
//	DELETE FROM t WHERE ctid = ANY (ARRAY(
//	    SELECT ctid FROM t WHERE <column> < $cutoff LIMIT $batch))
//	  AND (<column> < $cutoff) IS TRUE
//
// so with an index on the timestamp column each statement reads only the
// rows it deletes, and a cleanup with little to delete is cheap. Without
// one, each statement scans the table until it has found a batch, which
// is acceptable while old rows are many, but the last statement of every
// cleanup (the one that finds fewer rows than a batch) reads the whole
// table: a full scan of the outbox every Config.Interval. The status table
// has an index (on updated_at, for rows that are not FAILED). The default
// outbox table that `cdc-relay migrate` creates has none on created_at;
// for a large outbox create one, for example
//
//	CREATE INDEX CONCURRENTLY outbox_created_at_idx ON public.outbox (created_at);
//
// The first cleanup logs a line with that statement when the timestamp
// column is not the first column of an index.
//
// The cutoff is taken from the database's clock once per cleanup, so a
// cleanup ends even while new rows are inserted. Rows whose timestamp is
// NULL are never deleted.
//
// A partitioned outbox table is cleaned the same way, partition by
// partition as the statement finds old rows; the empty partitions stay.
// Dropping old partitions is cheaper: with --retention 0 the relay leaves
// that to you.
//
// A Cleaner is safe for concurrent use when its DB is (a pool). Two
// cleaners on the same tables are harmless: they delete each row once.
type Cleaner struct {
	db  DB
	cfg Config

	outbox, status string // quoted, schema-qualified
	tsColumn       string // unquoted
	idColumn       string // unquoted
	sourceTable    string

	// tsUnit is the unit of a bigint timestamp column: the option's, or
	// judged by the first lookup (under mu).
	tsUnit decoder.TimestampUnit
	tsZone string // the zone a timestamp without time zone is read in

	mu sync.Mutex
	// looked is true once the timestamp column has been looked up; then
	// outboxSQL is the batch DELETE, or "" when outbox retention is
	// disabled, and outboxArgs turns the cutoff and the batch size into
	// its parameters.
	looked     bool
	outboxSQL  string
	outboxArgs func(cutoff time.Time, batch int) []any
	// announced is set once Run said whether retention is on: a Cleaner
	// run again (the relay's next session) does not say it again.
	announced atomic.Bool
}

// New returns a cleaner. It does no I/O: the outbox table's timestamp
// column is looked up by the first cleanup that needs it. Config.Interval
// and Config.BatchRows left at zero take the defaults of DefaultConfig.
func New(db DB, opts Options) *Cleaner {
	return &Cleaner{
		db:       db,
		cfg:      opts.Config.withDefaults(),
		outbox:   pgx.Identifier{opts.OutboxSchema, opts.OutboxTable}.Sanitize(),
		status:   pgx.Identifier{opts.StatusSchema, opts.StatusTable}.Sanitize(),
		tsColumn: opts.TimestampColumn,
		tsUnit:   opts.TimestampUnit,
		tsZone:   cmp.Or(opts.TimeZone, "UTC"),
		idColumn: opts.IDColumn, sourceTable: opts.SourceTable,
	}
}

// batchDelete returns a statement that deletes a batch of $2 rows of table
// for which where (with the cutoff as $1) holds. The condition is checked
// again on each row deleted: in a partitioned table a ctid names a row in
// each partition, and only old ones may go (a batch may then delete more
// than $2 rows, all of them old). It is checked as "IS TRUE", which no
// index serves, so that the planner finds the rows by ctid and does not
// read every old row through the index once per batch.
func batchDelete(table, where string) string {
	return "DELETE FROM " + table + " WHERE ctid = ANY (ARRAY(SELECT ctid FROM " + table +
		" WHERE " + where + " LIMIT $2)) AND (" + where + ") IS TRUE"
}

// statusWhere selects the rows of the status table (quoted) retention may
// delete. The first condition is the predicate of the status table's
// partial index on updated_at (so the index is used); the second names the
// deletable states, so a FAILED, WAITING or PAUSED row, or any state added
// later, is never deleted. The last keeps a DEAD row, not skipped, that
// held rows of its topic and key follow (FAILED, DEAD not skipped, WAITING
// or PAUSED, as the status package holds them; reload rows too, which
// hold their key), or of its topic with byTopic, or with topicOrdered when
// its topic is one of the text array $3: it holds them, in order, until
// an operator retries, skips or purges it.
func statusWhere(table string, byTopic, topicOrdered bool) string {
	follows := func(sameKey string) string {
		return ` EXISTS (SELECT 1 FROM ` + table + ` AS w` +
			` WHERE w.status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED') AND w.skipped_at IS NULL AND w.topic = ` + table + `.topic` +
			sameKey + ` AND w.id > ` + table + `.id)`
	}
	keyed := ` AND ` + table + `.record_key IS NOT NULL AND` +
		follows(` AND sha256(w.record_key) = sha256(`+table+`.record_key) AND w.record_key = `+table+`.record_key`)
	topics := ` AND ` + table + `.topic <> '' AND` + follows("")
	holds := keyed
	switch {
	case byTopic:
		holds = topics
	case topicOrdered:
		holds = ` AND (` + table + `.topic = ANY ($3::text[])` + topics + ` OR ` + table + `.topic <> ALL ($3::text[])` + keyed + `)`
	}
	return `status <> 'FAILED' AND status IN ('DELIVERED', 'DEAD') AND updated_at < $1::timestamptz` +
		` AND NOT (status = 'DEAD' AND skipped_at IS NULL` + holds + `)`
}

// deleteStatus deletes the status rows older than Config.Status that
// statusWhere selects, batch by batch, and returns how many.
func (c *Cleaner) deleteStatus(ctx context.Context, res *Result, now time.Time) (int64, error) {
	args := []any{now.Add(-c.cfg.Status), c.cfg.BatchRows}
	topicOrdered := !c.cfg.ByTopic && len(c.cfg.TopicOrdered) > 0
	if topicOrdered {
		args = append(args, c.cfg.TopicOrdered)
	}
	return c.deleteOld(ctx, res, c.status, batchDelete(c.status, statusWhere(c.status, c.cfg.ByTopic, topicOrdered)), args)
}

// RunOnce does one cleanup: it deletes outbox rows older than
// Config.Outbox and DELIVERED and DEAD status rows older than
// Config.Status, batch by batch, until a batch deletes fewer rows than
// Config.BatchRows. A retention of zero skips its table. An error on one
// table does not stop the other. When ctx ends it stops after the
// statement in progress is cancelled and returns ctx's error. The Result
// counts what was deleted, also when an error is returned.
func (c *Cleaner) RunOnce(ctx context.Context) (Result, error) {
	start := time.Now()
	var res Result
	if c.cfg.Outbox <= 0 && c.cfg.Status <= 0 {
		return res, nil
	}
	var now time.Time
	if err := c.db.QueryRow(ctx, "SELECT statement_timestamp()").Scan(&now); err != nil {
		return res, fmt.Errorf("read the database's clock: %w", err)
	}
	var errs []error
	if c.cfg.Outbox > 0 {
		sql, args, err := c.outboxStatement(ctx)
		if err == nil && sql != "" {
			res.OutboxRows, err = c.deleteOld(ctx, &res, c.outbox, sql, args(now.Add(-c.cfg.Outbox), c.cfg.BatchRows))
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.cfg.Status > 0 && ctx.Err() == nil {
		n, err := c.deleteStatus(ctx, &res, now)
		res.StatusRows = n
		if err != nil {
			errs = append(errs, err)
		}
	}
	res.Elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("retention cleanup: %w", err)
	}
	return res, errors.Join(errs...)
}

// deleteOld runs sql with args (the cutoff, the batch size, and any
// more) until a batch deletes fewer than Config.BatchRows rows, and
// returns the rows deleted.
func (c *Cleaner) deleteOld(ctx context.Context, res *Result, table, sql string, args []any) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		t0 := time.Now()
		tag, err := c.db.Exec(ctx, sql, args...)
		d := time.Since(t0)
		res.Statements++
		res.Longest = max(res.Longest, d)
		if err != nil {
			return total, fmt.Errorf("delete old rows from %s: %w", table, err)
		}
		n := tag.RowsAffected()
		total += n
		if n < int64(c.cfg.BatchRows) {
			return total, nil
		}
	}
}

// outboxArgsFunc turns a cleanup's cutoff and batch size into the
// parameters of the outbox table's batch DELETE.
type outboxArgsFunc = func(cutoff time.Time, batch int) []any

// outboxStatement returns the outbox table's batch DELETE and the function
// that turns a cutoff and the batch size into its parameters, looking up
// the timestamp column's type on first use. sql is "" when outbox
// retention is disabled (no usable timestamp column); that is logged
// once. A failed look-up is tried again by the next cleanup.
func (c *Cleaner) outboxStatement(ctx context.Context) (sql string, args outboxArgsFunc, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.looked {
		return c.outboxSQL, c.outboxArgs, nil
	}
	log := c.cfg.Logger
	disable := func(why string) (string, outboxArgsFunc, error) {
		c.looked, c.outboxSQL, c.outboxArgs = true, "", nil
		log.Warn("outbox retention disabled: "+why+
			"; set --timestamp-column to the outbox table's timestamp column (timestamptz, timestamp or bigint epoch time), or --retention=0s to keep outbox rows",
			"table", c.outbox, "column", c.tsColumn)
		return "", nil, nil
	}
	if c.tsColumn == "" {
		return disable("no timestamp column is mapped")
	}
	var (
		exists, indexed, hasID bool
		typ                    *uint32
		name                   *string
	)
	// indexed: a valid index, not partial, that starts with the column.
	err = c.db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, a.atttypid, format_type(a.atttypid, a.atttypmod),
			EXISTS (SELECT 1 FROM pg_index AS i WHERE i.indrelid = a.attrelid AND i.indkey[0] = a.attnum
				AND i.indisvalid AND i.indpred IS NULL),
			EXISTS (SELECT 1 FROM pg_attribute AS d WHERE d.attrelid = to_regclass($1) AND d.attname = $3 AND d.attnum > 0 AND NOT d.attisdropped)
		FROM (SELECT 1) AS one
		LEFT JOIN pg_attribute AS a ON a.attrelid = to_regclass($1) AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped`,
		c.outbox, c.tsColumn, c.idColumn).Scan(&exists, &typ, &name, &indexed, &hasID)
	switch {
	case err != nil:
		return "", nil, fmt.Errorf("look up timestamp column %q of %s: %w", c.tsColumn, c.outbox, err)
	case !exists:
		return "", nil, fmt.Errorf("delete old rows from %s: the table does not exist", c.outbox)
	case typ == nil:
		return disable("the outbox table has no column " + strconv.Quote(c.tsColumn))
	}
	col := pgx.Identifier{c.tsColumn}.Sanitize()
	if *typ == oidInt8 && c.tsUnit == decoder.UnitUnset {
		unit, ok, err := c.judgeUnit(ctx, col)
		switch {
		case err != nil:
			return "", nil, err
		case !ok:
			return disable(fmt.Sprintf("the unit of bigint timestamp column %q is ambiguous (its oldest and newest values are not both epoch times from 1973 in the same unit, seconds, milliseconds or microseconds): set timestamp_unit (--timestamp-unit) to s, ms or us", c.tsColumn))
		case unit == decoder.UnitUnset:
			return "", nil, nil // no row yet: the next cleanup judges
		}
		log.Info("outbox retention: the bigint timestamp column has no timestamp_unit; its unit is judged by its oldest and newest values", "column", c.tsColumn, "unit", unit)
		c.tsUnit = unit
	}
	where, cutoff := cutoffCondition(col, *typ, c.tsUnit, c.tsZone)
	if where == "" {
		return disable(fmt.Sprintf("timestamp column %q has type %s", c.tsColumn, *name))
	}
	c.looked = true
	c.outboxSQL, c.outboxArgs = batchDelete(c.outbox, where), func(t time.Time, batch int) []any { return []any{cutoff(t), batch} }
	if hasID && c.sourceTable != "" {
		c.outboxSQL = batchDelete(c.outbox, where+" AND "+c.notPending())
		c.outboxArgs = func(t time.Time, batch int) []any { return []any{cutoff(t), batch, c.sourceTable} }
	}
	if !indexed {
		log.Info("outbox retention: the timestamp column has no index, so each cleanup reads the outbox table until it has found a batch, "+
			"and its last batch reads the whole table; for a large table create one",
			"table", c.outbox, "column", c.tsColumn,
			"sql", "CREATE INDEX CONCURRENTLY ON "+c.outbox+" ("+col+")")
	}
	return c.outboxSQL, c.outboxArgs, nil
}

// judgeUnit returns the unit of the bigint column col (quoted) of the
// outbox table by its oldest and newest values (decoder.JudgeUnits):
// false when either is ambiguous or they disagree, UnitUnset and true
// when the table has no row yet.
func (c *Cleaner) judgeUnit(ctx context.Context, col string) (decoder.TimestampUnit, bool, error) {
	var oldest, newest *int64
	if err := c.db.QueryRow(ctx, "SELECT min("+col+"), max("+col+") FROM "+c.outbox).Scan(&oldest, &newest); err != nil {
		return "", false, fmt.Errorf("read the oldest and newest values of timestamp column %q of %s: %w", c.tsColumn, c.outbox, err)
	}
	if newest == nil {
		return decoder.UnitUnset, true, nil
	}
	unit, ok := decoder.JudgeUnits(*oldest, *newest)
	return unit, ok, nil
}

// cutoffCondition is the condition of an outbox row older than the
// cutoff ($1) by col (quoted), a column of type typ, and the function
// that turns a cutoff into $1; "" for a type the relay does not support.
func cutoffCondition(col string, typ uint32, unit decoder.TimestampUnit, zone string) (string, func(time.Time) any) {
	asTime := func(t time.Time) any { return t }
	switch typ {
	case oidTimestamptz:
		return col + " < $1::timestamptz", asTime
	case oidTimestamp:
		// The relay reads a timestamp without time zone as wall time in
		// the table's zone.
		return col + " < ($1::timestamptz AT TIME ZONE '" + strings.ReplaceAll(zone, "'", "''") + "')", asTime
	case oidInt8:
		return col + " < $1::bigint", func(t time.Time) any { return unit.Epoch(t) }
	}
	return "", nil
}

// notPending is the condition of an outbox row whose event the poller is
// not still to send: no FAILED, WAITING or PAUSED status row of its table
// ($3) holds its id (an adopted or reset row is FAILED with reload, and is
// read from the outbox row at each attempt). The status table's index on
// (source_table, event_id) finds each, so a batch costs one index probe
// per row it reads, or the planner hashes the status rows still to send
// once a batch, whichever it finds cheaper. The id is the text of the
// column's output function, as the status table holds it.
func (c *Cleaner) notPending() string {
	return "NOT EXISTS (SELECT 1 FROM " + c.status + " AS p WHERE p.source_table = $3::text" +
		" AND p.event_id = format('%s', " + c.outbox + "." + pgx.Identifier{c.idColumn}.Sanitize() + ")" +
		" AND p.status IN ('FAILED', 'WAITING', 'PAUSED'))"
}

// Run runs a cleanup at once and then Config.Interval after the end of
// each, until ctx ends. It logs one line for each cleanup that deleted
// rows, and each error, and goes on. With both retentions zero it returns
// at once. The first Run of a Cleaner says whether retention is on.
func (c *Cleaner) Run(ctx context.Context) {
	log := c.cfg.Logger
	say := c.announced.CompareAndSwap(false, true)
	if c.cfg.Outbox <= 0 && c.cfg.Status <= 0 {
		if say {
			log.Info("retention off: outbox and status rows are kept")
		}
		return
	}
	level := slog.LevelInfo
	if !say {
		level = slog.LevelDebug
	}
	log.Log(ctx, level, "retention on", "outbox", durationOrKept(c.cfg.Outbox), "status", durationOrKept(c.cfg.Status),
		"every", c.cfg.Interval, "batch_rows", c.cfg.BatchRows)
	tick.Every(ctx, c.cfg.Interval, func(ctx context.Context) bool {
		res, err := c.RunOnce(ctx)
		if m := c.cfg.Metrics; m != nil {
			m.RetentionDeleted.WithLabelValues("outbox").Add(float64(res.OutboxRows))
			m.RetentionDeleted.WithLabelValues("status").Add(float64(res.StatusRows))
		}
		if res.Deleted() > 0 {
			log.Info("old rows deleted", "outbox_rows", res.OutboxRows, "status_rows", res.StatusRows,
				"statements", res.Statements, "longest", res.Longest.Round(time.Millisecond), "took", res.Elapsed.Round(time.Millisecond))
		}
		if ctx.Err() != nil {
			return false
		}
		if err != nil {
			log.Log(ctx, pgerr.Level(err), "retention cleanup failed; trying again", "err", err, "in", c.cfg.Interval)
		}
		return true
	}, tick.Now(), tick.FromEnd())
}

// durationOrKept renders a retention period for the log.
func durationOrKept(d time.Duration) string {
	if d <= 0 {
		return "kept"
	}
	return d.String()
}
