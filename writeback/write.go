package writeback

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
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
	delivered, failed, reasons := f.outDelivered[:0], f.outFailed[:0], f.outReasons[:0]
	for i := range t.held {
		p := &t.held[i]
		switch {
		case !t.isLive(p):
		case p.failed:
			failed = append(failed, p.id)
			reasons = append(reasons, p.reason)
		default:
			delivered = append(delivered, p.id)
		}
	}
	err := f.exec(ctx, t, t.sql.delivered, delivered, nil, t.Columns.Delivered)
	if err == nil {
		var args []string // nil: the statement takes no reasons
		if t.sql.failedReasons {
			args = reasons
		}
		err = f.exec(ctx, t, t.sql.failed, failed, args, t.Columns.Failed)
	}
	clear(delivered)
	clear(failed)
	clear(reasons)
	f.outDelivered, f.outFailed, f.outReasons = delivered[:0], failed[:0], reasons[:0]
	t.compact()
	if t.live == 0 && t.peak > shrinkAbove {
		// A Go map keeps the memory of its largest size: after an outage
		// that held many outcomes, start afresh.
		t.latest, t.held, t.peak = map[string]uint64{}, nil, 0
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

// exec runs sql for ids (and reasons, if not nil) in statements of up to
// MaxBatch ids, and forgets each statement's outcomes once it succeeded.
func (f *flusher) exec(ctx context.Context, t *tableState, sql string, ids, reasons []string, status string) error {
	for len(ids) > 0 {
		n := min(len(ids), f.w.cfg.MaxBatch)
		args := []any{ids[:n], status}
		if reasons != nil {
			args = append(args, reasons[:n])
			reasons = reasons[n:]
		}
		sctx, cancel := context.WithTimeout(ctx, f.w.stmtTimeout)
		tag, err := f.w.db.Exec(sctx, sql, args...)
		cancel()
		if err != nil {
			return fmt.Errorf("update %s: %w", t.quoted, err)
		}
		f.w.statements.Add(1)
		f.w.updated.Add(tag.RowsAffected())
		for _, id := range ids[:n] {
			delete(t.latest, id)
		}
		t.live -= n
		f.live -= n
		ids = ids[n:]
	}
	return nil
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
