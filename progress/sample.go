package progress

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// sample is the highest id of the source as of a snapshot, and the WAL
// position past which every id up to it committed: once settled, the
// position read after the transactions that were writing to the source
// at the snapshot ended (one of them may hold a lower id).
type sample struct {
	max     int64
	lsn     pglogrepl.LSN // read after the snapshot; once settled, after its writers ended
	writers []string      // the virtual transactions writing to the source then
	settled bool
}

// maxSamples bounds the samples waiting for the checkpoint row: while it
// is that many intervals behind, no new one is taken.
const maxSamples = 64

// sample reads, in one statement and in this order, the source's highest
// id in the statement's snapshot, the transactions writing to the source
// (holding the ROW EXCLUSIVE lock of the table or of one of its
// partitions: every one in progress at the snapshot that inserted a row,
// until it ends, a prepared one too), and the WAL insert position; it
// settles the earlier samples none of whose writers still writes, and
// adds the new one (settled at once with no writer). A transaction that
// took an id from the sequence but had not inserted its row yet is not
// seen: the moment between the two.
func (w *Writer) sample(ctx context.Context) error {
	src := w.cfg.Source
	table := pgx.Identifier{src.Schema, src.Name}.Sanitize()
	var max *int64
	var writers []string
	var lsnText string
	err := w.db.QueryRow(ctx, "SELECT (SELECT max("+ident(src.IDColumn)+") FROM "+table+")::bigint,"+
		" ARRAY(SELECT l.virtualtransaction FROM pg_locks AS l WHERE l.locktype = 'relation' AND l.mode = 'RowExclusiveLock' AND l.granted"+
		" AND (l.relation = to_regclass($1) OR l.relation IN (SELECT t.relid FROM pg_partition_tree(to_regclass($1)) AS t))),"+
		" pg_current_wal_insert_lsn()::text", table).Scan(&max, &writers, &lsnText)
	if err != nil {
		return fmt.Errorf("read the highest id of %s.%s: %w", src.Schema, src.Name, err)
	}
	lsn, err := pglogrepl.ParseLSN(lsnText)
	if err != nil {
		return err
	}
	w.settle(writers, lsn)
	if max != nil && len(w.samples) < maxSamples {
		w.samples = append(w.samples, sample{max: *max, lsn: lsn, writers: writers, settled: len(writers) == 0})
	}
	return nil
}

// settle settles the samples none of whose writers is among writing, the
// writers read before lsn: those that committed did before lsn.
func (w *Writer) settle(writing []string, lsn pglogrepl.LSN) {
	for i := range w.samples {
		s := &w.samples[i]
		if !s.settled && !slices.ContainsFunc(s.writers, func(x string) bool { return slices.Contains(writing, x) }) {
			s.lsn, s.settled, s.writers = max(s.lsn, lsn), true, nil
		}
	}
}

// promote takes the settled samples the checkpoint row passed, oldest
// first.
func (w *Writer) promote() {
	saved := w.cfg.Saved()
	n := 0
	for n < len(w.samples) && w.samples[n].settled && w.samples[n].lsn <= saved {
		w.reached, w.known = max(w.reached, w.samples[n].max), true
		n++
	}
	w.samples = w.samples[n:]
}
