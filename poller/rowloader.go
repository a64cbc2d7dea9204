package poller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/pgtext"
	"github.com/cdc-relay/cdc-relay/status"
)

// RowLoader reads the outbox row of an event to send again as its row is
// now (status.Row.Reload: a team's reset of the row, a row adopted at the
// switch-over) and makes it the record the stream makes of such a row:
// its LoadMany is the poller's Config.Load. A row of a table routed by tags is adopted once
// per topic it routes to, with that topic in the reload row: it is sent
// to that topic. It keeps one connection, opened at the first load
// and again after an error, with the settings the decoder reads text by.
// It is safe for concurrent use.
type RowLoader struct {
	url    func() string         // the connection string of a new connection
	tables map[string]*loadTable // by the status table's source_table

	mu   sync.Mutex
	conn *pgconn.PgConn // nil until needed
}

// loadTable is one outbox table a RowLoader reads.
type loadTable struct {
	one   string // SELECT * … WHERE id = $1
	many  string // SELECT * … WHERE id = ANY($1): $1 an array of the id column's type, in text
	id    string // the id column
	name  string // the status table's source_table
	index int    // in the relay's tables

	// mu serializes the decoder's use: a Decoder keeps state between
	// rows (the headers slice it reuses), and the pollers of several
	// publishers load at once.
	mu  sync.Mutex
	dec *decoder.Decoder
}

// NewRowLoader returns the loader of the outbox tables whose mappings
// are mappings, named names (the status table's source_table of each);
// url gives the connection string of each new connection (it may change:
// a password file read again). A table without an id column is not read:
// nothing names its rows.
func NewRowLoader(url func() string, names []string, mappings []decoder.Mapping) (*RowLoader, error) {
	l := &RowLoader{url: url, tables: map[string]*loadTable{}}
	for i, name := range names {
		m := mappings[i]
		if m.IDColumn == "" {
			continue // nothing names its rows
		}
		dec, err := decoder.New(m)
		if err != nil {
			return nil, err
		}
		sel := "SELECT * FROM " + pgx.Identifier{m.Schema, m.Table}.Sanitize() + " WHERE " + pgx.Identifier{m.IDColumn}.Sanitize()
		l.tables[name] = &loadTable{dec: dec, index: i, id: m.IDColumn, name: name, one: sel + " = $1", many: sel + " = ANY($1)"}
	}
	return l, nil
}

// Close closes the loader's connection; a later Load opens another.
func (l *RowLoader) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		_ = l.conn.Close(context.Background())
		l.conn = nil
	}
}

// Load returns row with the record of its outbox row as it is now. An
// error that wraps ErrUnloadable says it never will: the row is gone,
// cannot become a record, or its table is not the relay's.
func (l *RowLoader) Load(ctx context.Context, row status.Row) (status.Row, error) {
	t := l.tables[row.SourceTable]
	if t == nil {
		return row, notMapped(row)
	}
	res, err := l.read(ctx, t.one, []byte(row.EventID))
	if err != nil {
		return row, l.readError(ctx, row.SourceTable, err)
	}
	if len(res.values) == 0 {
		return row, fmt.Errorf("its outbox row %s of %s no longer exists: the event %w", row.EventID, row.SourceTable, ErrUnloadable)
	}
	rd, err := t.decoder(res)
	if err != nil {
		return row, err
	}
	return t.decodeRow(row, rd, res.values[len(res.values)-1])
}

// LoadMany is Load over rows, read with one statement per outbox table:
// out[i] and errs[i] are what Load returns for rows[i], each row's error
// its own. When PostgreSQL refuses a table's statement for what it holds
// (a 42xxx or 22xxx error: an id that is not of the column's type, row
// security), that table's rows are read one by one, so that only the row
// at fault fails; any other error of the statement (a lost connection) is
// each of its rows' error. It is the poller's Config.Load.
func (l *RowLoader) LoadMany(ctx context.Context, rows []status.Row) (out []status.Row, errs []error) {
	out, errs = slices.Clone(rows), make([]error, len(rows))
	byTable := map[*loadTable][]int{}
	var tables []*loadTable // in the order of rows
	for i, row := range rows {
		t := l.tables[row.SourceTable]
		if t == nil {
			errs[i] = notMapped(row)
			continue
		}
		if byTable[t] == nil {
			tables = append(tables, t)
		}
		byTable[t] = append(byTable[t], i)
	}
	for _, t := range tables {
		l.loadOf(ctx, t, rows, byTable[t], out, errs)
	}
	return out, errs
}

// loadOf loads the rows at idx, all of t, into out and errs, as LoadMany
// says.
func (l *RowLoader) loadOf(ctx context.Context, t *loadTable, rows []status.Row, idx []int, out []status.Row, errs []error) {
	one := func(i int) { out[i], errs[i] = l.Load(ctx, rows[i]) }
	if len(idx) == 1 {
		one(idx[0])
		return
	}
	ids := make([]string, 0, len(idx))
	for _, i := range idx {
		ids = append(ids, rows[i].EventID)
	}
	res, err := l.read(ctx, t.many, textArray(ids))
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code[:2] == "42" || pgErr.Code[:2] == "22"):
		for _, i := range idx {
			one(i) // only the row at fault fails
		}
		return
	case err != nil:
		err = l.readError(ctx, t.name, err)
		for _, i := range idx {
			errs[i] = err
		}
		return
	}
	col := slices.Index(res.names, t.id)
	byID := make(map[string][][]byte, len(res.values))
	for _, v := range res.values {
		if col >= 0 && v[col] != nil {
			byID[string(v[col])] = v
		}
	}
	rd, rdErr := t.decoder(res)
	for _, i := range idx {
		v, ok := byID[rows[i].EventID]
		switch {
		case ok && rdErr != nil:
			errs[i] = rdErr
		case ok:
			out[i], errs[i] = t.decodeRow(rows[i], rd, v)
		default:
			one(i) // gone, or its id written otherwise than the column's text is: as Load finds it
		}
	}
}

// notMapped is the error of a row whose table is not in the relay's
// config.
func notMapped(row status.Row) error {
	return fmt.Errorf("outbox table %q is not in the relay's config: its event %s %w", row.SourceTable, row.EventID, ErrUnloadable)
}

// readError is the error of a failed read of sourceTable's rows: with its
// fix when row security hides rows (not for good: read once the role may),
// unloadable for good when PostgreSQL refuses the statement (42xxx,
// 22xxx), else err itself.
func (l *RowLoader) readError(ctx context.Context, sourceTable string, err error) error {
	if rls := l.rowSecurity(ctx, err); rls != nil {
		return rls
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code[:2] == "42" || pgErr.Code[:2] == "22") {
		return fmt.Errorf("read its outbox row of %s: %w: %w", sourceTable, err, ErrUnloadable)
	}
	return err
}

// decoder returns the decoder of the rows of res, which t's mapping reads;
// an error wrapping ErrUnloadable when their columns do not fit it.
func (t *loadTable) decoder(res readResult) (*decoder.Rows, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rd, err := t.dec.Rows(res.names, res.types)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrUnloadable)
	}
	return rd, nil
}

// decodeRow returns row with the record of the outbox row values, read by
// rd (one of t's decoder), as the stream makes it; an error wrapping
// ErrUnloadable when it cannot become one. The record is a copy, which
// the next decode leaves alone.
func (t *loadTable) decodeRow(row status.Row, rd *decoder.Rows, values [][]byte) (status.Row, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := rd.Decode(values, 0)
	ev := msg.Event
	switch {
	case msg.Poison != nil:
		return row, fmt.Errorf("%w: %w", msg.Poison, ErrUnloadable)
	case msg.Routed && row.Topic != "" && !slices.Contains(msg.Routes, row.Topic):
		// Adopted for a route its tags no longer match.
		return row, fmt.Errorf("its row no longer matches a route to topic %q (its routes: %q): the event %w", row.Topic, msg.Routes, ErrUnloadable)
	case msg.Routed && row.Topic != "":
		ev.Topic = row.Topic
	case msg.Routed && len(msg.Routes) != 1:
		return row, fmt.Errorf("its row matches %d routes, not one: the event %w", len(msg.Routes), ErrUnloadable)
	case msg.Routed:
		ev.Topic = msg.Routes[0]
	}
	row.Topic, row.Key, row.Value, row.Timestamp = ev.Topic, slices.Clone(ev.Key), slices.Clone(ev.Value), ev.Timestamp
	row.Partition, row.Placed = ev.Partition, ev.Placed
	row.Headers = make([]decoder.Header, len(ev.Headers))
	for i, h := range ev.Headers {
		row.Headers[i] = decoder.Header{Key: h.Key, Value: slices.Clone(h.Value)}
	}
	return row, nil
}

// textArray is ids as a PostgreSQL array in text: each element quoted, so
// that no id reads as NULL or splits.
func textArray(ids []string) []byte {
	var b []byte
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(id); j++ {
			if id[j] == '"' || id[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, id[j])
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

// readResult is what a read returned, in text: the columns' names and
// types, and each row's values (a NULL nil).
type readResult struct {
	names  []string
	types  []uint32
	values [][][]byte
}

// read runs query with the one parameter arg (in text, its type the one
// PostgreSQL infers) on the loader's connection, opening it first if
// needed.
func (l *RowLoader) read(ctx context.Context, query string, arg []byte) (res readResult, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		if l.conn, err = pgtext.Connect(ctx, l.url()); err != nil {
			return res, err
		}
	}
	rr := l.conn.ExecParams(ctx, query, [][]byte{arg}, nil, nil, nil)
	for _, f := range rr.FieldDescriptions() {
		res.names, res.types = append(res.names, f.Name), append(res.types, f.DataTypeOID)
	}
	for rr.NextRow() {
		values := make([][]byte, len(rr.Values()))
		for i, v := range rr.Values() {
			values[i] = slices.Clone(v) // a NULL stays nil
		}
		res.values = append(res.values, values)
	}
	if _, err := rr.Close(); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			_ = l.conn.Close(context.Background())
			l.conn = nil
		}
		return readResult{}, err
	}
	return res, nil
}

// rowSecurity returns err with its fix when it is PostgreSQL refusing a
// read that row-level security would filter (see pgtext.Connect), else nil.
func (l *RowLoader) rowSecurity(ctx context.Context, err error) error {
	if _, ok := pgerr.RowSecurity(err, ""); !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		fix, _ := pgerr.RowSecurity(err, "")
		return fmt.Errorf("%w: %s", err, fix)
	}
	return pgtext.RowSecurity(ctx, l.conn, err)
}
