package progress

import (
	"context"
	"fmt"
	"slices"
	"time"

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
	at      time.Time // when it was taken
}

// maxSamples bounds the samples waiting for the checkpoint row: while it
// is that many intervals behind, no new one is taken.
const maxSamples = 64

// sample reads, in one statement, the source's highest id in the
// statement's snapshot and the transactions writing to the source
// (holding the ROW EXCLUSIVE lock of the table or of one of its
// partitions, read after the snapshot: every one in progress at the
// snapshot that inserted a row, until it ends, a prepared one too), then,
// in a statement of its own, the WAL insert position; it settles the
// earlier samples none of whose writers still writes, and adds the new
// one (settled at once with no writer). A transaction that took an id
// from the sequence but had not inserted its row yet is not seen: the
// moment between the two, or longer with ids allocated ahead.
func (w *Writer) sample(ctx context.Context) error {
	src := w.cfg.Source
	table := pgx.Identifier{src.Schema, src.Name}.Sanitize()
	var max *int64
	var writers []string
	err := w.db.QueryRow(ctx, "SELECT (SELECT max("+ident(src.IDColumn)+") FROM "+table+")::bigint,"+
		" ARRAY(SELECT l.virtualtransaction FROM pg_locks AS l WHERE l.locktype = 'relation' AND l.mode = 'RowExclusiveLock' AND l.granted"+
		" AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"+
		" AND (l.relation = to_regclass($1) OR l.relation IN (SELECT t.relid FROM pg_partition_tree(to_regclass($1)) AS t)))", table).Scan(&max, &writers)
	if err != nil {
		return fmt.Errorf("read the highest id of %s.%s: %w", src.Schema, src.Name, err)
	}
	// The position in a statement of its own: after the writers were read,
	// whatever order one statement evaluates its expressions in.
	var lsnText string
	if err := w.db.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsnText); err != nil {
		return fmt.Errorf("read the WAL position: %w", err)
	}
	lsn, err := pglogrepl.ParseLSN(lsnText)
	if err != nil {
		return err
	}
	w.settle(writers, lsn)
	if max != nil && len(w.samples) < maxSamples {
		w.samples = append(w.samples, sample{max: *max, lsn: lsn, writers: writers, settled: len(writers) == 0, at: time.Now()})
	}
	w.sayStuck(ctx)
	return nil
}

// stuckAfter is how long a sample may wait for the transactions writing to
// the outbox table before the writer says which hold it.
const stuckAfter = time.Minute

// sayStuck warns, at most once a stuckAfter, when the oldest sample has
// waited longer than that for the transactions writing to the outbox
// table: no position moves meanwhile.
func (w *Writer) sayStuck(ctx context.Context) {
	if len(w.samples) == 0 || w.samples[0].settled || time.Since(w.samples[0].at) < stuckAfter || time.Since(w.said) < stuckAfter {
		return
	}
	w.said = time.Now()
	w.cfg.Log.Warn("the progress table's positions wait for transactions that have been writing to the outbox table for over a minute: "+
		"an id one of them took may come before those written; find them in pg_stat_activity by their virtual transaction, and end them",
		"table", w.cfg.Table.Schema+"."+w.cfg.Table.Name, "virtual_transactions", w.samples[0].writers, "waiting", time.Since(w.samples[0].at).Round(time.Second))
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
