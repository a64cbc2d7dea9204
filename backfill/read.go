package backfill

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// count counts the rows the predicate selects between the keys.
func (b *backfiller) count(ctx context.Context) (int64, error) {
	var n int64
	err := b.readOnly(ctx, func() error {
		rows, err := b.texts(ctx, b.q.count(), b.params())
		if err == nil && len(rows) == 1 {
			n, err = strconv.ParseInt(string(rows[0][0]), 10, 64)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("count the rows the predicate selects in %s: %w", b.q.table, err)
	}
	return n, nil
}

// bound finds the first and last key the predicate selects after the
// key, into res, and makes the last the backfill's end: rows committed
// later with keys beyond it are the stream's, and a backfill of a
// predicate that new rows match ends (it would chase them forever when
// the application writes faster than Config.Rate).
func (b *backfiller) bound(ctx context.Context, res *Result) error {
	var last []string
	err := b.readOnly(ctx, func() error {
		for _, e := range []struct {
			desc bool
			to   *string
		}{{false, &res.First}, {true, &res.Last}} {
			rows, err := b.texts(ctx, b.q.edge(e.desc), b.params())
			if err != nil {
				return err
			}
			for _, r := range rows {
				vs := make([]string, len(r))
				for i, v := range r {
					vs[i] = string(v)
				}
				*e.to, last = FormatKey(vs), vs // the last is read last
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("find the first and last key the predicate selects in %s: %w", b.q.table, err)
	}
	b.upTo, b.q.upTo = last, last != nil
	return nil
}

// readOnly runs f in a read-only transaction on the backfill's
// connection: the predicate is the user's SQL, and may not write.
func (b *backfiller) readOnly(ctx context.Context, f func() error) error {
	return pgx.BeginTxFunc(ctx, b.conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(pgx.Tx) error { return f() })
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

// read reads the next batch into bt: the rows after the key, as records.
func (b *backfiller) read(ctx context.Context, bt *batch) error {
	bt.reset()
	return b.readOnly(ctx, func() error {
		rr := b.conn.PgConn().ExecParams(ctx, b.q.batch(), b.params(strconv.Itoa(b.cfg.Batch)), nil, nil, nil)
		if err := b.recorderFor(rr.FieldDescriptions()); err != nil {
			_, _ = rr.Close()
			return err
		}
		for rr.NextRow() {
			b.rec.add(bt, rr.Values())
		}
		if _, err := rr.Close(); err != nil {
			return fmt.Errorf("read the rows the predicate selects in %s: %w", b.q.table, err)
		}
		return nil
	})
}

// recorderFor makes, at the first batch, the recorder of rows with the
// fields fields.
func (b *backfiller) recorderFor(fields []pgconn.FieldDescription) error {
	if b.rec != nil {
		return nil
	}
	names, types := make([]string, len(fields)), make([]uint32, len(fields))
	for i, f := range fields {
		names[i], types[i] = f.Name, f.DataTypeOID
	}
	dec, err := decoder.New(b.cfg.Mapping)
	if err != nil {
		return err
	}
	rows, err := dec.Rows(names, types)
	if err != nil {
		return err
	}
	rec := &recorder{rows: rows, topic: b.cfg.TopicOverride, table: b.q.table, log: b.cfg.Logger,
		header: kgo.RecordHeader{Key: Header, Value: []byte(b.cfg.RunID)}}
	for _, c := range b.q.key.Columns {
		at := slices.Index(names, c)
		if at < 0 {
			return fmt.Errorf("key column %q of %s is not among its columns", c, b.q.table)
		}
		rec.keyAt = append(rec.keyAt, at)
	}
	b.rec = rec
	return nil
}
