package writeback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxReason is the most bytes of a reason written to an error column, so
// that a long one fits an index on the column (btree entries are limited
// to about 2,700 bytes).
const maxReason = 1000

// write writes t's live outcomes, in statements of up to MaxBatch ids.
func (f *flusher) write(ctx context.Context, t *tableState) {
	if t.sql == nil {
		sctx, cancel := context.WithTimeout(ctx, f.w.stmtTimeout)
		sql, err := prepare(sctx, f.w.db, t)
		cancel()
		if err != nil {
			f.failed(ctx, t, err)
			return
		}
		t.sql = sql
	}
	live := f.liveIdx[:0]
	for i := range t.held {
		if !t.held[i].settled {
			live = append(live, i)
		}
	}
	err := f.writeAll(ctx, t, live)
	f.liveIdx = live[:0]
	t.compact()
	if t.live == 0 && t.peak > shrinkAbove {
		// A Go map keeps the memory of its largest size: after an outage
		// that held many outcomes, start afresh.
		t.index, t.held, t.peak = map[string]int{}, nil, 0
	}
	if err != nil {
		f.failed(ctx, t, err)
		return
	}
	if t.failing > 0 {
		f.w.log.Info("write-back works again", "table", t.quoted, "failed_attempts", t.failing)
	}
	t.failing, t.backoff, t.due = 0, firstRetry, time.Time{}
}

// writeAll writes the outcomes held at the indexes idx, in statements of
// up to MaxBatch ids, Config.Statements at once. A statement that failed
// for a row's sake is then searched on its own (writeBatch).
func (f *flusher) writeAll(ctx context.Context, t *tableState, idx []int) error {
	var chunks [][]int
	for len(idx) > 0 {
		n := min(len(idx), f.w.cfg.MaxBatch)
		chunks = append(chunks, idx[:n])
		idx = idx[n:]
	}
	errs := make([]error, len(chunks))
	tags := make([]pgconn.CommandTag, len(chunks))
	sem := make(chan struct{}, f.w.cfg.Statements)
	var wg sync.WaitGroup
	for i, c := range chunks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tags[i], errs[i] = f.statement(ctx, t, c)
		})
	}
	wg.Wait()
	var first error
	for i, c := range chunks {
		switch err := errs[i]; {
		case err == nil:
			f.written(ctx, t, c, tags[i])
		case first != nil:
		case rowLevel(err):
			f.misses = 0
			first = f.search(ctx, t, c, err)
		default:
			first = err
		}
	}
	return first
}

// maxMisses is how many single rows may refuse the delivered value, in
// one statement's search, before the table has taken it for any row:
// beyond it the value itself, not the rows, is taken to be what the table
// refuses.
const maxMisses = 4

// writeBatch writes one statement's outcomes, and searches it when it
// fails for a row's sake.
func (f *flusher) writeBatch(ctx context.Context, t *tableState, idx []int) error {
	// A half that search writes again may hold outcomes its first try
	// settled (written, deleted, given up): they are not named again.
	idx = slices.DeleteFunc(slices.Clone(idx), func(i int) bool { return t.held[i].settled })
	if len(idx) == 0 {
		return nil
	}
	tag, err := f.statement(ctx, t, idx)
	if err == nil {
		f.written(ctx, t, idx, tag)
		return nil
	}
	if !rowLevel(err) {
		return err
	}
	return f.search(ctx, t, idx, err)
}

// search answers a statement that failed with err for what a row holds (a
// trigger, a constraint: see rowLevel): it splits the batch in halves to
// find the rows that refuse, writes the others, and gives up on the
// refusing rows once the table has taken the value for another row
// (refuse). Otherwise it returns the error, and every outcome it did not
// write stays held.
func (f *flusher) search(ctx context.Context, t *tableState, idx []int, err error) error {
	if len(idx) == 1 {
		if !t.took {
			f.misses++
			return err // perhaps the value: the table's error, until it takes it for a row
		}
		f.refuse(t, idx[0], err)
		return nil
	}
	if !t.took && f.misses >= maxMisses {
		return err
	}
	half := len(idx) / 2
	first := f.writeBatch(ctx, t, idx[:half])
	if first != nil && !rowLevel(first) {
		return first
	}
	if err := f.writeBatch(ctx, t, idx[half:]); err != nil {
		return err
	}
	if first != nil && t.took {
		// The first half failed before the table took the value; the
		// second half showed that it takes it.
		return f.writeBatch(ctx, t, idx[:half])
	}
	return first
}

// statement runs one UPDATE for the outcomes held at the indexes idx. It
// changes nothing of f or t, so that several may run at once.
func (f *flusher) statement(ctx context.Context, t *tableState, idx []int) (pgconn.CommandTag, error) {
	ids := make([]string, len(idx))
	for k, i := range idx {
		ids[k] = t.held[i].id
	}
	sctx, cancel := context.WithTimeout(ctx, f.w.stmtTimeout)
	defer cancel()
	tag, err := f.w.db.Exec(sctx, t.sql.delivered, ids, t.Columns.Delivered)
	if err != nil {
		return tag, fmt.Errorf("update %s: %w", t.quoted, err)
	}
	return tag, nil
}

// written counts a statement that succeeded and forgets its outcomes,
// but for those it could not write yet (unwritten), held for the next
// flush.
func (f *flusher) written(ctx context.Context, t *tableState, idx []int, tag pgconn.CommandTag) {
	f.w.statements.Add(1)
	f.w.updated.Add(tag.RowsAffected())
	if tag.RowsAffected() > 0 {
		t.took = true
	}
	var later map[string]bool
	if int(tag.RowsAffected()) < len(idx) {
		later = f.unwritten(ctx, t, idx)
	}
	for _, i := range idx {
		if !later[t.held[i].id] {
			f.forget(t, i)
		}
	}
}

// Bounds on holding an outcome whose row the UPDATE did not change.
const (
	// unchangedTries is how many statements may leave a row that exists
	// unchanged before its outcome is given up: the first may have begun
	// before the row was visible; after that the row refuses the UPDATE
	// without an error (a trigger, a rule, a policy).
	unchangedTries = 3
	// notVisibleFor is how long an outcome waits for its row's
	// transaction to become visible (Writer.notVisibleFor): a moment, or
	// as long as synchronous replication waits for a standby; one that
	// never does was lost (a failover to a standby that did not have it).
	notVisibleFor = 10 * time.Minute
)

// errUnchanged is why a row that exists but that the UPDATE left
// unchanged, statement after statement, is given up.
var errUnchanged = errors.New("the row exists but the UPDATE changed nothing: a BEFORE UPDATE trigger that returns NULL, " +
	"a rule, or a row-level security policy that the relay's role does not pass")

// unwritten returns those of the outcomes held at idx, which a statement
// named but did not all update, that are still to be written: their row
// exists and does not say delivered (for unchangedTries statements), or
// is not visible yet (for notVisibleFor); it gives up the others of those
// (refuse, giveUpNotVisible). If the look-up fails, every one of them is.
func (f *flusher) unwritten(ctx context.Context, t *tableState, idx []int) map[string]bool {
	ids := make([]string, len(idx))
	xids := make([]int64, len(idx))
	at := make(map[string]int, len(idx))
	for k, i := range idx {
		ids[k], xids[k] = t.held[i].id, int64(t.held[i].xid)
		at[ids[k]] = i
	}
	sctx, cancel := context.WithTimeout(ctx, f.w.stmtTimeout)
	defer cancel()
	later := map[string]bool{}
	var unchanged, notVisible []string
	if err := f.w.db.QueryRow(sctx, t.sql.unwritten, ids, xids, t.Columns.Delivered).Scan(&unchanged, &notVisible); err != nil {
		f.failLog.Log(t.quoted+" look-up", slog.LevelWarn, "write-back could not look up the rows an UPDATE did not change; writing them again at the next flush",
			"table", t.quoted, "err", err, "rows", len(idx))
		for _, id := range ids {
			later[id] = true
		}
		return later
	}
	for _, id := range unchanged {
		i := at[id]
		if t.held[i].tries++; t.held[i].tries < unchangedTries {
			later[id] = true
			continue
		}
		later[id] = true // settled by refuse, not forgotten twice
		f.refuse(t, i, errUnchanged)
	}
	now := time.Now()
	for _, id := range notVisible {
		i := at[id]
		p := &t.held[i]
		later[id] = true
		switch {
		case p.unseen.IsZero():
			p.unseen = now
			f.w.notVisible.Add(1)
		case now.Sub(p.unseen) > f.w.notVisibleFor:
			f.giveUpNotVisible(t, i)
		}
	}
	return later
}

// giveUpNotVisible gives up the outcome held at i, whose row has not
// been visible for notVisibleFor: it logs it, at most once a minute per
// table with the others counted, and lets the event's position be
// confirmed. The event is in Kafka; its row, if it ever appears, keeps
// its old status.
func (f *flusher) giveUpNotVisible(t *tableState, i int) {
	f.refusedLog.Log(t.quoted+" not visible", slog.LevelWarn,
		"write-back gave up on a row not visible for 10 minutes: its transaction was lost in a failover, or synchronous replication still waits for a standby; "+
			"the event is delivered, and its row, if it appears, keeps its old status",
		"table", t.quoted, "id", t.held[i].id)
	f.forget(t, i)
}

// cleanReason makes reason storable in a text column: valid UTF-8, without
// NUL, at most maxReason bytes.
func cleanReason(reason string) string {
	if len(reason) <= maxReason && utf8.ValidString(reason) && strings.IndexByte(reason, 0) < 0 {
		return reason
	}
	r := strings.ReplaceAll(strings.ToValidUTF8(reason, "\uFFFD"), "\x00", "")
	if len(r) > maxReason {
		r = strings.ToValidUTF8(r[:maxReason], "")
	}
	return r
}
