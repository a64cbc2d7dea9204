package backfill

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/pubwatch"
	"github.com/cdc-relay/cdc-relay/republish"
)

// keyChunk is how many keys one query of the selection copies: each chunk
// is a short read-only transaction, so that the connection that runs the
// predicate holds no transaction open between chunks.
const keyChunk = 10000

// selectKeys fixes the rows the backfill publishes: it copies the keys
// the predicate selects (after Config.After) into the table of selected
// keys, a chunk at a time in key order, and finds their count and first
// and last key (into res). Every chunk reads the one snapshot exported
// when the selection began (exportSnapshot), so the keys are those the
// predicate selects at that moment: rows committed later are the
// stream's, whatever their key, and a backfill ends however fast new rows
// match the predicate. The snapshot holds the server's xmin horizon only
// while the keys are selected.
func (b *backfiller) selectKeys(ctx context.Context, res *Result) error {
	for _, sql := range b.q.createKeys() {
		if _, err := b.conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("create the table of selected keys of %s: %w", b.q.table, needsTemporary(ctx, b.conn, err))
		}
	}
	snapshot, release, err := b.exportSnapshot(ctx)
	if err != nil {
		return err
	}
	defer release()
	after := b.after
	for {
		n, last, err := b.copyChunk(ctx, snapshot, after)
		if err != nil {
			return fmt.Errorf("select the keys the predicate selects in %s: %w", b.q.table, needsSelect(ctx, b.conn, b.q.table, err))
		}
		res.Total += n
		if n < keyChunk {
			break
		}
		after = last
	}
	if _, err := b.conn.Exec(ctx, "ANALYZE "+keysTable); err != nil { // the server's autovacuum never analyzes a temporary table
		return fmt.Errorf("analyze the table of selected keys of %s: %w", b.q.table, err)
	}
	return b.edges(ctx, res)
}

// inKeyOrder makes a chunk's plan read the table in key order, on its
// primary-key index, stopping at the chunk's end: else, where the key is
// random (a uuid), the server may find a scan of the whole table and a
// sort cheaper for each chunk, which makes the selection quadratic in the
// table's size. In key order the chunks together read the table once,
// whatever the predicate: one an index of its own serves is not read
// through that index.
const inKeyOrder = "SET LOCAL enable_sort = off"

// exportSnapshot begins a REPEATABLE READ transaction on the lock's
// connection (which runs nothing else) and exports its snapshot, for each
// chunk of the selection to import. release ends the transaction, and
// with it the snapshot.
func (b *backfiller) exportSnapshot(ctx context.Context) (string, func(), error) {
	tx, err := b.lockConn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return "", nil, fmt.Errorf("begin the snapshot of the selection of %s: %w", b.q.table, err)
	}
	release := func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }
	var snapshot string
	if err := tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&snapshot); err != nil {
		release()
		return "", nil, fmt.Errorf("export the snapshot of the selection of %s: %w", b.q.table, err)
	}
	return snapshot, release, nil
}

// copyChunk copies the next chunk of selected keys after the key after,
// as of snapshot, and returns how many it copied and the last.
func (b *backfiller) copyChunk(ctx context.Context, snapshot string, after []string) (int64, []string, error) {
	var (
		n    int64
		last []string
	)
	err := b.inSnapshot(ctx, snapshot, func() error {
		if _, err := b.conn.Exec(ctx, inKeyOrder); err != nil {
			return err
		}
		tag, err := b.conn.PgConn().ExecParams(ctx, b.q.keys(after != nil), params(after, strconv.Itoa(keyChunk)), nil, nil, nil).Close()
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		last, err = b.oneKey(ctx, b.q.edgeKey(true), nil)
		return err
	})
	return n, last, err
}

// edges finds the first and last selected key, into res.
func (b *backfiller) edges(ctx context.Context, res *Result) error {
	for _, e := range []struct {
		desc bool
		to   *string
	}{{false, &res.First}, {true, &res.Last}} {
		k, err := b.oneKey(ctx, b.q.edgeKey(e.desc), nil)
		if err != nil {
			return fmt.Errorf("find the first and last selected key of %s: %w", b.q.table, err)
		}
		if k != nil {
			*e.to = FormatKey(k)
		}
	}
	return nil
}

// oneKey runs sql, which returns at most one key, with ps; nil for none.
func (b *backfiller) oneKey(ctx context.Context, sql string, ps [][]byte) ([]string, error) {
	rows, err := b.texts(ctx, sql, ps)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	vs := make([]string, len(rows[0]))
	for i, v := range rows[0] {
		vs[i] = string(v)
	}
	return vs, nil
}

// params are a key's values, then extra, as query parameters.
func params(key []string, extra ...string) [][]byte {
	var ps [][]byte
	for _, v := range append(slices.Clone(key), extra...) {
		ps = append(ps, []byte(v))
	}
	return ps
}

// readOnly runs f in a read-only transaction on the backfill's
// connection: the predicate is the user's SQL, and may not write (but
// for the table of selected keys, which is temporary).
func (b *backfiller) readOnly(ctx context.Context, f func() error) error {
	return pgx.BeginTxFunc(ctx, b.conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(pgx.Tx) error { return f() })
}

// inSnapshot runs f in a read-only REPEATABLE READ transaction on the
// backfill's connection that imports snapshot, the name PostgreSQL gave
// it (SET TRANSACTION SNAPSHOT takes a literal, not a parameter).
func (b *backfiller) inSnapshot(ctx context.Context, snapshot string, f func() error) error {
	return pgx.BeginTxFunc(ctx, b.conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT "+pgdb.QuoteLiteral(snapshot)); err != nil {
			return fmt.Errorf("import the selection's snapshot: %w", err)
		}
		return f()
	})
}

// texts runs sql with params, all in text, and returns its rows' values.
func (b *backfiller) texts(ctx context.Context, sql string, params [][]byte) ([][][]byte, error) {
	rr := b.conn.PgConn().ExecParams(ctx, sql, params, nil, nil, nil)
	var rows [][][]byte
	for rr.NextRow() {
		r := make([][]byte, len(rr.Values()))
		for i, v := range rr.Values() {
			r[i] = slices.Clone(v)
		}
		rows = append(rows, r)
	}
	_, err := rr.Close()
	return rows, err
}

// read hands the next page of selected keys' rows to pub, and returns
// the page's last key (the next page starts after it); nil when no key is
// left.
func (b *backfiller) read(ctx context.Context, pub *republish.Publisher) ([]string, error) {
	var end []string
	err := b.readOnly(ctx, func() error {
		var err error
		if end, err = b.oneKey(ctx, b.q.pageEnd(b.after != nil), params(b.after, strconv.Itoa(b.cfg.Batch))); err != nil || end == nil {
			return err
		}
		rr := b.conn.PgConn().ExecParams(ctx, b.q.batch(b.after != nil), params(b.after, strconv.Itoa(b.cfg.Batch)), nil, nil, nil)
		for rr.NextRow() {
			if err := b.add(ctx, pub, rr.Values()); err != nil {
				_, _ = rr.Close()
				return err
			}
		}
		_, err = rr.Close()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the selected rows of %s: %w", b.q.table, needsSelect(ctx, b.conn, b.q.table, err))
	}
	return end, nil
}

// resolveMapping makes the recorder of the table's rows: it checks the
// mapping against the table's columns (a query that reads no row), so
// that a dry run finds what a run would.
func (b *backfiller) resolveMapping(ctx context.Context) error {
	rr := b.conn.PgConn().ExecParams(ctx, b.q.probe(), nil, nil, nil, nil)
	fields := slices.Clone(rr.FieldDescriptions())
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("read the columns of %s: %w", b.q.table, needsSelect(ctx, b.conn, b.q.table, err))
	}
	return b.recorderFor(ctx, fields)
}

// recorderFor makes the decoder of rows with the fields fields, and
// finds their key columns.
func (b *backfiller) recorderFor(ctx context.Context, fields []pgconn.FieldDescription) error {
	names, types := republish.Columns(fields)
	ms, err := pubwatch.WithNotNull(ctx, b.conn, []decoder.Mapping{b.cfg.Mapping})
	if err != nil {
		return err
	}
	dec, err := decoder.New(ms[0])
	if err != nil {
		return fmt.Errorf("the mapping of %s: %w", b.q.table, err)
	}
	if b.rows, err = dec.Rows(names, types); err != nil {
		return fmt.Errorf("the mapping of %s does not fit its columns: %w; fix the table's settings in the config file (or the flags) to name its columns", b.q.table, err)
	}
	for _, c := range b.q.key.Columns {
		at := slices.Index(names, c)
		if at < 0 {
			return fmt.Errorf("key column %q of %s is not among its columns", c, b.q.table)
		}
		b.keyAt = append(b.keyAt, at)
	}
	return nil
}
