package republish

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/internal/pgtext"
	"github.com/cdc-relay/cdc-relay/pubwatch"
)

// Window reads the rows of one mapped outbox table whose timestamp column
// is at or after a time, in the text format the decoder reads
// (TimeZone=UTC, DateStyle=ISO, bytea_output=hex): the rows `cdc-relay
// recover` publishes again. It holds a connection of its own until Close.
type Window struct {
	conn  *pgconn.PgConn
	table string // quoted
	where string // the condition on the timestamp column, with $1
	since []byte // $1
	from  time.Time
	order string
	// column, typ and unit are the timestamp column's name, type and, for
	// a bigint, unit: for the operator, when the window selects nothing.
	column, typ string
	unit        decoder.TimestampUnit
	dec         *decoder.Decoder
	index       int // the table's index in the relay's tables, for the status table
}

// OpenWindow opens the window on the rows of m's table written at or
// after since: it connects ([pgtext.Connect]), checks that the relay's
// role reads every row, and finds the timestamp column's type (and, for a
// bigint, its unit: the mapping's, else judged by the oldest and newest
// values). index is the table's in the relay's tables, set on every event
// for the status table. The operator must act on an error that is a
// [fatal.Error].
//
// A timestamp column without a time zone holds wall times in the zone of
// the session that wrote them, which the relay cannot know: its window is
// widened by 12 hours, so that it holds every row written since in any
// zone from UTC−12 to UTC+14 (see windowOn), and more rows are published
// twice.
func OpenWindow(ctx context.Context, url string, m decoder.Mapping, index int, since time.Time, log *slog.Logger) (*Window, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn, err := pgtext.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	ms, err := pubwatch.WithNotNullText(ctx, conn, []decoder.Mapping{m})
	if err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	dec, err := decoder.New(ms[0])
	if err != nil {
		_ = conn.Close(ctx)
		return nil, fatal.Error{Err: err} // the mapping: the operator's to fix
	}
	r := &Window{conn: conn, dec: dec, table: pgx.Identifier{m.Schema, m.Table}.Sanitize(), index: index, from: since}
	if rls, err := pgtext.Readable(ctx, conn, r.table); err != nil {
		_ = conn.Close(ctx)
		if rls {
			return nil, fatal.Error{Err: err}
		}
		return nil, err
	}
	ts := pgx.Identifier{m.TimestampColumn}.Sanitize()
	var typ string
	rr := conn.ExecParams(ctx, "SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped",
		[][]byte{[]byte(r.table), []byte(m.TimestampColumn)}, nil, nil, nil)
	for rr.NextRow() {
		typ = string(rr.Values()[0])
	}
	if _, err := rr.Close(); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("look up timestamp column %q of %s: %w", m.TimestampColumn, r.table, err)
	}
	if typ == "" {
		_ = conn.Close(ctx)
		return nil, fatal.Error{Err: fmt.Errorf("outbox table %s has no column %q: set --timestamp-column to the column that says when a row was written", r.table, m.TimestampColumn)}
	}
	if typ == "bigint" {
		if r.unit, err = r.epochUnit(ctx, m, ts, log); err != nil {
			_ = conn.Close(ctx)
			return nil, err
		}
	}
	var ok bool
	loc, err := m.Location()
	if err != nil {
		_ = conn.Close(ctx)
		return nil, fatal.Error{Err: err}
	}
	if m.TimeZone == "" {
		loc = nil // the zone of the sessions that wrote the rows is not known
	}
	r.where, r.since, ok = windowOn(ts, typ, since, r.unit, loc)
	r.column, r.typ = m.TimestampColumn, typ
	switch {
	case !ok:
		_ = conn.Close(ctx)
		return nil, fatal.Error{Err: fmt.Errorf("timestamp column %q of %s has type %s; recover needs timestamptz, timestamp or bigint (epoch seconds, milliseconds or microseconds)", m.TimestampColumn, r.table, typ)}
	case typ == noTimeZone && loc == nil:
		log.Info("timestamp column has no time zone: the window is widened by 12 hours, since the relay cannot know the time zone "+
			"of the sessions that wrote the rows (any from UTC-12 to UTC+14); rows written up to 12 hours before it (more east of UTC) are published again too",
			"column", m.TimestampColumn, "table", r.table, "since", since, "column_since", since.UTC().Add(-localTimeSlack).Format("2006-01-02 15:04:05"))
	}
	r.order = ts
	if m.IDColumn != "" {
		r.order += ", " + pgx.Identifier{m.IDColumn}.Sanitize()
	}
	return r, nil
}

// noTimeZone is the type of a timestamp column without a time zone.
const noTimeZone = "timestamp without time zone"

// zoneSlack is how far back a zone's wall time can go when its clocks do:
// an hour in most zones' autumn, two in Antarctica/Troll's.
const zoneSlack = 2 * time.Hour

// localTimeSlack is how far a timestamp without a time zone may be behind
// the UTC wall time of when it was written: the zone furthest west,
// UTC−12.
const localTimeSlack = 12 * time.Hour

// epochUnit returns the unit of the bigint timestamp column ts of m's
// table: the mapping's, else the one both its oldest and its newest
// value's magnitude show (decoder.JudgeUnits; the decoder reads each
// value so), or an error saying what to set when either says none or they
// disagree. An empty table is read in milliseconds: it has no row to
// select.
func (r *Window) epochUnit(ctx context.Context, m decoder.Mapping, ts string, log *slog.Logger) (decoder.TimestampUnit, error) {
	if m.TimestampUnit != decoder.UnitUnset {
		return m.TimestampUnit, nil
	}
	rr := r.conn.ExecParams(ctx, "SELECT min("+ts+"), max("+ts+") FROM "+r.table, nil, nil, nil, nil)
	var oldest, newest []byte
	for rr.NextRow() {
		oldest, newest = slices.Clone(rr.Values()[0]), slices.Clone(rr.Values()[1])
	}
	if _, err := rr.Close(); err != nil {
		return "", fmt.Errorf("read the oldest and newest values of timestamp column %q of %s: %w", m.TimestampColumn, r.table, err)
	}
	if newest == nil {
		return decoder.UnitMillis, nil
	}
	first, err := strconv.ParseInt(string(oldest), 10, 64)
	if err != nil {
		return "", fmt.Errorf("read the oldest value of timestamp column %q of %s: %w", m.TimestampColumn, r.table, err)
	}
	last, err := strconv.ParseInt(string(newest), 10, 64)
	if err != nil {
		return "", fmt.Errorf("read the newest value of timestamp column %q of %s: %w", m.TimestampColumn, r.table, err)
	}
	unit, ok := decoder.JudgeUnits(first, last)
	if !ok {
		return "", fatal.Error{Err: fmt.Errorf("the unit of bigint timestamp column %q of %s is ambiguous: its oldest value, %d, and its newest, %d, are not both epoch times from 1973 to 5138 in the same unit (seconds, milliseconds or microseconds); "+
			"set timestamp_unit: s, ms or us for the table in the config file (or --timestamp-unit)", m.TimestampColumn, r.table, first, last)}
	}
	log.Info("timestamp column is bigint with no timestamp_unit: its unit is judged by its oldest and newest values; set timestamp_unit (--timestamp-unit) to say it",
		"column", m.TimestampColumn, "table", r.table, "oldest", first, "newest", last, "unit", unit)
	return unit, nil
}

// windowOn returns the condition on the timestamp column ts, of type typ,
// that holds for every row written at or after since, with its argument
// ($1); ok is false for a type recover cannot read.
//
// A timestamp without a time zone holds the wall time of the zone of the
// session that wrote it (now() in a `DEFAULT now()` is cast in the
// session's TimeZone, which JDBC sets to the JVM's, for one). A row
// written at the instant t ≥ since by a session at UTC+o, o from −12 to
// +14 hours, holds t+o ≥ since−12h read as UTC: the condition compares the
// column with since's UTC wall time less 12 hours. Rows written up to 12
// hours before since by a session in UTC, up to 26 hours by one at UTC+14,
// pass it too: duplicates, never a loss. With the table's zone known (loc,
// the mapping's TimeZone) the column holds wall time there, and the
// condition compares it with the wall time there zoneSlack before since:
// a wall time goes back when the clocks do (by an hour in autumn), so a
// row written after since can read earlier than since's wall time.
func windowOn(ts, typ string, since time.Time, unit decoder.TimestampUnit, loc *time.Location) (where string, arg []byte, ok bool) {
	switch typ {
	case "timestamp with time zone":
		return ts + " >= $1::timestamptz", []byte(since.UTC().Format(time.RFC3339Nano)), true
	case noTimeZone:
		if loc != nil {
			return ts + " >= $1::timestamp", []byte(since.Add(-zoneSlack).In(loc).Format("2006-01-02 15:04:05.999999")), true
		}
		return ts + " >= $1::timestamp", []byte(since.UTC().Add(-localTimeSlack).Format("2006-01-02 15:04:05.999999")), true
	case "bigint":
		return ts + " >= $1::bigint", []byte(strconv.FormatInt(unit.Epoch(since), 10)), true
	}
	return "", nil, false
}

// writtenAfter counts the table's rows inserted by a transaction that
// began after the last one that wrote the checkpoint row of slot in
// checkpointTable (quoted): by their xmin's age, which a frozen row's
// makes the oldest. Rows the gap holds, or later ones; -1 when the
// checkpoint row is missing.
func (r *Window) writtenAfter(ctx context.Context, checkpointTable, slot string) (int, error) {
	rr := r.conn.ExecParams(ctx, "SELECT (SELECT count(*) FROM "+r.table+" WHERE age(xmin) < c.age) FROM (SELECT age(xmin) AS age FROM "+checkpointTable+" WHERE slot_name = $1) AS c",
		[][]byte{[]byte(slot)}, nil, nil, nil)
	n := -1
	for rr.NextRow() {
		n, _ = strconv.Atoi(string(rr.Values()[0]))
	}
	if _, err := rr.Close(); err != nil {
		return 0, fmt.Errorf("count the rows of %s written since the checkpoint: %w", r.table, err)
	}
	return n, nil
}

// CheckGap refuses a repair whose window selects no row while the table
// holds rows written after the relay last saved its checkpoint, the row
// of slot in checkpointTable (quoted): the gap holds transactions the
// window would miss, and recover would end having published none of
// them. The timestamp column is then in another unit, or not the time a
// row was written, or the rows have none. That refusal is a
// [fatal.Error].
func (r *Window) CheckGap(ctx context.Context, checkpointTable, slot string) error {
	n, err := r.Count(ctx)
	if err != nil || n > 0 {
		return err
	}
	written, err := r.writtenAfter(ctx, checkpointTable, slot)
	if err != nil || written <= 0 {
		return err
	}
	unit := ""
	if r.typ == "bigint" {
		unit = fmt.Sprintf(" (read as epoch time in %s: from %s)", r.unit, r.since)
	}
	return fatal.Error{Err: fmt.Errorf("recover's window on %s selects no row, but %d row(s) were written after the relay last saved its checkpoint: "+
		"the gap holds transactions the window would miss. Check timestamp column %q (%s)%s: that it holds when each row was written, in its unit "+
		"(timestamp_unit: s, ms or us; --timestamp-unit), and not NULL; or give cdc-relay recover --since the time the gap began (the window starts at %s)",
		r.table, written, r.column, r.typ, unit, r.from.UTC().Format(time.RFC3339))}
}

// Predicate is the window's condition on the timestamp column as SQL
// that takes no argument (its time a quoted literal): what the status
// store's Adopt selects the window's rows by, for the publishers beside
// Kafka.
func (r *Window) Predicate() string {
	i := strings.LastIndex(r.where, "$1")
	return r.where[:i] + pgdb.QuoteLiteral(string(r.since)) + r.where[i+2:]
}

// Close closes the window's connection.
func (r *Window) Close() { _ = r.conn.Close(context.Background()) }

// Count counts the rows in the window.
func (r *Window) Count(ctx context.Context) (int, error) {
	rr := r.conn.ExecParams(ctx, "SELECT count(*) FROM "+r.table+" WHERE "+r.where, [][]byte{r.since}, nil, nil, nil)
	n := 0
	for rr.NextRow() {
		n, _ = strconv.Atoi(string(rr.Values()[0]))
	}
	if _, err := rr.Close(); err != nil {
		return 0, fmt.Errorf("count outbox rows: %w", err)
	}
	return n, nil
}

// Publish hands every row in the window to pub, in the order of the
// timestamp column (then the id column), and flushes pub at the end.
// written, if set, is told the ids of the rows Kafka acknowledged
// (Table.Written); notKafkas, that none of the table's events go to
// Kafka (Table.NotKafkas); sends, if set, keeps the records of the topics it refuses from Kafka
// (Table.Sends).
func (r *Window) Publish(ctx context.Context, pub *Publisher, written func(ctx context.Context, ids []string) error, sends func(topic string) bool, notKafkas bool) error {
	rr := r.conn.ExecParams(ctx, "SELECT * FROM "+r.table+" WHERE "+r.where+" ORDER BY "+r.order,
		[][]byte{r.since}, nil, nil, nil)
	rows, err := r.dec.Rows(Columns(rr.FieldDescriptions()))
	if err != nil {
		_, _ = rr.Close()
		return err
	}
	pub.Begin(Table{Rows: rows, Index: r.index, Name: r.table, Written: written, Sends: sends, NotKafkas: notKafkas})
	for rr.NextRow() {
		if err := pub.Add(ctx, rr.Values(), ""); err != nil {
			_, _ = rr.Close()
			return err
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("read outbox rows from %s: %w", r.table, err)
	}
	return pub.Flush(ctx)
}
