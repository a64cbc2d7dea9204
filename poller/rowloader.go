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
// its Load is the poller's Config.Load. A row of a table routed by tags is adopted once
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
	query string // SELECT * … WHERE id = $1
	dec   *decoder.Decoder
	index int // in the relay's tables
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
		l.tables[name] = &loadTable{dec: dec, index: i,
			query: "SELECT * FROM " + pgx.Identifier{m.Schema, m.Table}.Sanitize() + " WHERE " + pgx.Identifier{m.IDColumn}.Sanitize() + " = $1"}
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
		return row, fmt.Errorf("outbox table %q is not in the relay's config: its event %s %w", row.SourceTable, row.EventID, ErrUnloadable)
	}
	names, types, values, err := l.read(ctx, t, row.EventID)
	var pgErr *pgconn.PgError
	if rls := l.rowSecurity(ctx, err); rls != nil {
		return row, rls // not for good: it reads the row once the role may
	}
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code[:2] == "42" || pgErr.Code[:2] == "22"):
		return row, fmt.Errorf("read its outbox row of %s: %w: %w", row.SourceTable, err, ErrUnloadable)
	case err != nil:
		return row, err
	case values == nil:
		return row, fmt.Errorf("its outbox row %s of %s no longer exists: the event %w", row.EventID, row.SourceTable, ErrUnloadable)
	}
	rows, err := t.dec.Rows(names, types)
	if err != nil {
		return row, fmt.Errorf("%w: %w", err, ErrUnloadable)
	}
	msg := rows.Decode(values, 0)
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
	row.Headers = make([]decoder.Header, len(ev.Headers))
	for i, h := range ev.Headers {
		row.Headers[i] = decoder.Header{Key: h.Key, Value: slices.Clone(h.Value)}
	}
	return row, nil
}

// read selects the row of t with id, in text: nil values when there is
// none.
func (l *RowLoader) read(ctx context.Context, t *loadTable, id string) (names []string, types []uint32, values [][]byte, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		if l.conn, err = pgtext.Connect(ctx, l.url()); err != nil {
			return nil, nil, nil, err
		}
	}
	rr := l.conn.ExecParams(ctx, t.query, [][]byte{[]byte(id)}, nil, nil, nil)
	for _, f := range rr.FieldDescriptions() {
		names, types = append(names, f.Name), append(types, f.DataTypeOID)
	}
	for rr.NextRow() {
		values = make([][]byte, len(rr.Values()))
		for i, v := range rr.Values() {
			values[i] = slices.Clone(v) // a NULL stays nil
		}
	}
	if _, err := rr.Close(); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			_ = l.conn.Close(context.Background())
			l.conn = nil
		}
		return nil, nil, nil, err
	}
	return names, types, values, nil
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
