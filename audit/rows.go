package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/backfill"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/pubwatch"
	"github.com/cdc-relay/cdc-relay/republish"
)

// orderAlias names the order column's value in the query: the column
// after the mapping's.
const orderAlias = "cdc_relay_audit_order"

// tableRows reads the rows of Config.Mapping's table that the range
// selects, in one read-only snapshot, through a cursor a batch at a time.
type tableRows struct {
	cfg   Config
	conn  *pgx.Conn
	table string // quoted
	order string // the order column's name; "" for none
}

// openRows connects to the table's database as Config says.
func openRows(ctx context.Context, cfg Config) (*tableRows, error) {
	conn, err := pgconnect.Open(ctx, cfg.PostgresURL, pgconnect.Options{RuntimeParams: map[string]string{
		"TimeZone": "UTC", "DateStyle": "ISO", "bytea_output": "hex",
		"row_security":     pgerr.RowSecurityOff,
		"application_name": "cdc-relay audit, pid " + strconv.Itoa(os.Getpid()),
	}})
	if err != nil {
		return nil, err
	}
	return &tableRows{cfg: cfg, conn: conn, table: pgx.Identifier{cfg.Mapping.Schema, cfg.Mapping.Table}.Sanitize()}, nil
}

func (t *tableRows) close() { _ = t.conn.Close(context.Background()) }

// Estimate is the planner's estimate of the table's rows (pg_class's
// reltuples, as of the last VACUUM or ANALYZE); 0 when it has none (a
// partitioned table's parent, a table never analyzed) or cannot be read.
func (t *tableRows) Estimate(ctx context.Context) int {
	var n float64
	if err := t.conn.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = $1::regclass", t.table).Scan(&n); err != nil || n <= 0 {
		return 0
	}
	return int(min(n*1.05, 1<<31)) // a little room for rows since
}

// ReadRows hands each row the range selects to add, in the snapshot of
// one read-only REPEATABLE READ transaction, Config.Batch rows a fetch,
// at most Config.RowRate rows a second.
func (t *tableRows) ReadRows(ctx context.Context, add func(Row)) error {
	err := pgx.BeginTxFunc(ctx, t.conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		names, types, err := t.columns(ctx)
		if err != nil {
			return err
		}
		rows, err := t.decoder(ctx, names, types)
		if err != nil {
			return err
		}
		sql, args, err := t.query(ctx, names)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DECLARE cdc_relay_audit NO SCROLL CURSOR FOR "+sql, args...); err != nil {
			return err
		}
		return t.fetchAll(ctx, rows, len(names), add)
	})
	if err != nil {
		return t.explain(ctx, err)
	}
	return nil
}

// fetchAll fetches the cursor's rows a batch at a time, decodes each
// (its first n columns) and hands it to add.
func (t *tableRows) fetchAll(ctx context.Context, rows *decoder.Rows, n int, add func(Row)) error {
	limiter := backfill.NewLimiter(t.cfg.RowRate)
	fetch := "FETCH " + strconv.Itoa(t.cfg.Batch) + " FROM cdc_relay_audit"
	for {
		if err := limiter.Wait(ctx, t.cfg.Batch); err != nil {
			return err
		}
		rr := t.conn.PgConn().ExecParams(ctx, fetch, nil, nil, nil, nil)
		got := 0
		for rr.NextRow() {
			got++
			vs := rr.Values()
			add(rowOf(rows.Decode(vs[:n], 0), vs[n]))
		}
		if _, err := rr.Close(); err != nil {
			return err
		}
		if got < t.cfg.Batch {
			return nil
		}
	}
}

// rowOf is the audit's row of the decoded msg, with order, the order
// column's value in text (nil: none).
func rowOf(msg decoder.Message, order []byte) Row {
	ev := &msg.Event
	r := Row{Key: ev.Key, KeyNull: ev.Key == nil, Placed: ev.Placed}
	for _, h := range ev.Headers {
		if h.Key == "id" {
			r.ID = h.Value
			break
		}
	}
	if order != nil {
		if v, err := strconv.ParseInt(string(order), 10, 64); err == nil {
			r.Order, r.HasOrder = v, true
		}
	}
	switch {
	case msg.Poison != nil:
		r.Poison = msg.Poison.Error()
		if r.ID == nil {
			r.ID = ev.ID
		}
	case msg.Routed:
		r.Topics = msg.Routes
	default:
		r.Topics = []string{ev.Topic}
	}
	return r
}

// columns are the table's columns the mapping reads (a query that reads
// no row): those it has.
func (t *tableRows) columns(ctx context.Context) ([]string, []uint32, error) {
	rr := t.conn.PgConn().ExecParams(ctx, "SELECT * FROM "+t.table+" LIMIT 0", nil, nil, nil, nil)
	names, types := republish.Columns(rr.FieldDescriptions())
	if _, err := rr.Close(); err != nil {
		return nil, nil, err
	}
	var ns []string
	var ts []uint32
	for _, c := range t.cfg.Mapping.Columns() {
		if i := slices.Index(names, c); i >= 0 {
			ns, ts = append(ns, c), append(ts, types[i])
		}
	}
	return ns, ts, nil
}

// decoder is the table's decoder of rows of these columns: the relay's,
// so that each row's topic, key and id header are the record's.
func (t *tableRows) decoder(ctx context.Context, names []string, types []uint32) (*decoder.Rows, error) {
	ms, err := pubwatch.WithNotNull(ctx, t.conn, []decoder.Mapping{t.cfg.Mapping})
	if err != nil {
		return nil, err
	}
	dec, err := decoder.New(ms[0])
	if err != nil {
		return nil, fmt.Errorf("the mapping of %s: %w", t.table, err)
	}
	rows, err := dec.Rows(names, types)
	if err != nil {
		return nil, fmt.Errorf("the mapping of %s does not fit its columns: %w; fix the table's settings in the config file (or the flags) to name its columns", t.table, err)
	}
	return rows, nil
}

// explain adds to err, a failure to read the table, the GRANT that lets
// the role read it, when the role may not.
func (t *tableRows) explain(ctx context.Context, err error) error {
	var pe interface{ SQLState() string }
	if !errors.As(err, &pe) || pe.SQLState() != "42501" {
		return fmt.Errorf("read the rows of %s: %w", t.table, err)
	}
	var role string
	if qerr := t.conn.QueryRow(ctx, "SELECT current_user").Scan(&role); qerr != nil {
		role = "<the role of --postgres-url>"
	}
	return fmt.Errorf("read the rows of %s: %w: the audit's role needs SELECT on the table and USAGE on its schema: as an administrator, run GRANT SELECT ON %s TO %s",
		t.table, err, t.table, pgx.Identifier{role}.Sanitize())
}

// query is the cursor's query of the columns names (the payload's value
// left out: the audit needs its type only) and the order column's
// value, with the range's conditions, and its arguments.
func (t *tableRows) query(ctx context.Context, names []string) (string, []any, error) {
	cols := make([]string, len(names))
	for i, c := range names {
		q := pgx.Identifier{c}.Sanitize()
		if c == t.cfg.Mapping.PayloadColumn && payloadOnly(t.cfg.Mapping) {
			q = "CASE WHEN false THEN " + q + " END AS " + q
		}
		cols[i] = q
	}
	order, err := t.orderExpr(ctx)
	if err != nil {
		return "", nil, err
	}
	cols = append(cols, order+" AS "+orderAlias)
	where, args, err := t.where(ctx)
	if err != nil {
		return "", nil, err
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + t.table + where, args, nil
}

// payloadOnly says whether m's payload column plays no other role, so
// that the audit may leave its value out.
func payloadOnly(m decoder.Mapping) bool {
	p, n := m.PayloadColumn, 0
	for _, c := range slices.Concat([]string{m.IDColumn, m.KeyColumn, m.TopicColumn, m.TagsColumn, m.HeadersColumn, m.TimestampColumn,
		m.TracingSpanContextColumn}, m.HeaderColumns, m.EnvelopeColumns) {
		if c == p {
			n++
		}
	}
	parts, _ := m.TemplateParts()
	for _, part := range parts {
		if part.Column == p {
			n++
		}
	}
	return n == 0
}
