package writeback

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// firstRetry is the wait after a first failed attempt; it doubles with
// each failure up to Writer.retryMax.
const firstRetry = 100 * time.Millisecond

// shrinkAbove is the number of outcomes above which memory that a burst
// made grow is released once the burst is over.
const shrinkAbove = 1 << 16

// maxReason is the most bytes of a reason written to an error column, so
// that a long one fits an index on the column (btree entries are limited
// to about 2,700 bytes).
const maxReason = 1000

// flusher is the state of the goroutine in Run: the outcomes it took from
// the queue and has not written yet, per table, with each table's
// statements and retry schedule.
type flusher struct {
	w      *Writer
	tables []tableState
	spare  queue  // the queue's other half, handed back at each take
	seq    uint64 // numbers outcomes in the order they were reported
	live   int    // the outcomes held, over all tables
	limit  logLimiter
	// loggedDrops is the Dropped count last logged.
	loggedDrops int64
	lastErr     error // the latest failure, for Run's result
	// Reused for each table's statement arguments.
	outDelivered, outFailed, outReasons []string
}

// tableState is one table's outcomes held by the flusher.
type tableState struct {
	Table
	quoted string
	// held are the outcomes taken from the queue in the order they were
	// reported. Only the latest outcome of an id is live: latest maps
	// each id held to its seq; older entries are skipped and compacted
	// away.
	held   []pending
	latest map[string]uint64
	live   int
	peak   int         // the most ids latest held since it was made
	sql    *statements // nil until looked up (again, after a refusal)

	backoff time.Duration
	due     time.Time // no attempt before
	failing int       // attempts failed since the last success
}

// pending is one outcome held by the flusher.
type pending struct {
	id, reason string
	seq        uint64
	failed     bool
}

func (t *tableState) isLive(p *pending) bool { return t.latest[p.id] == p.seq }

// compact drops the entries of held that are not live.
func (t *tableState) compact() {
	n := 0
	for i := range t.held {
		if t.isLive(&t.held[i]) {
			t.held[n] = t.held[i]
			n++
		}
	}
	clear(t.held[n:])
	t.held = t.held[:n]
}

func (f *flusher) init(w *Writer) {
	f.w = w
	f.limit = logLimiter{every: time.Minute, last: map[string]time.Time{}, suppressed: map[string]int{}}
	f.tables = make([]tableState, len(w.cfg.Tables))
	for i, t := range w.cfg.Tables {
		f.tables[i] = tableState{Table: t, quoted: pgx.Identifier{t.Schema, t.Name}.Sanitize(),
			latest: map[string]uint64{}, backoff: firstRetry}
	}
}

// flush takes the outcomes reported since the last flush and writes what
// it holds to each table whose retry time has come (every table if force).
func (f *flusher) flush(ctx context.Context, force bool) {
	w := f.w
	w.mu.Lock()
	taken := w.q
	w.q = f.spare
	owed := w.owed
	w.owed = 0
	w.retained += taken.len() - owed
	w.mu.Unlock()

	f.dropOldest(owed)
	f.merge(&taken)
	if cap(taken.entries) > shrinkAbove && 8*taken.len() < cap(taken.entries) {
		taken = queue{} // let the memory of a burst go
	}
	taken.reset()
	f.spare = taken
	f.settle()

	for i := range f.tables {
		t := &f.tables[i]
		if t.live == 0 || (!force && time.Now().Before(t.due)) {
			continue
		}
		f.write(ctx, t)
		f.settle()
		if ctx.Err() != nil {
			break
		}
	}
	f.logDrops()
}

// final writes what is waiting once more after Run's context ended, for
// at most finalTimeout.
func (f *flusher) final(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.w.finalTimeout)
	defer cancel()
	f.flush(fctx, true)
	n := f.w.Stats().Pending
	if n == 0 {
		return nil
	}
	err := f.lastErr
	if err == nil {
		err = errors.New("reported after the last flush")
	}
	return fmt.Errorf("write-back: %d outcomes not written before stopping (the events are in Kafka; their rows keep their old status): %w", n, err)
}

// settle makes the Writer's count of retained outcomes the flusher's: what
// the flusher no longer holds (written, dropped, or a repeated id) is not
// owed either.
func (f *flusher) settle() {
	w := f.w
	w.mu.Lock()
	k := w.retained - f.live
	w.retained = f.live
	w.owed = max(0, w.owed-k)
	w.mu.Unlock()
}

// merge moves the queue's outcomes into the tables' held outcomes. The
// latest outcome of an id replaces any earlier one still held.
func (f *flusher) merge(q *queue) {
	for _, e := range q.live() {
		t := &f.tables[e.table]
		id := string(q.id(&e))
		f.seq++
		if _, ok := t.latest[id]; !ok {
			t.live++
			f.live++
			t.peak = max(t.peak, t.live)
		}
		t.latest[id] = f.seq
		reason := ""
		if e.failed {
			reason = cleanReason(e.reason)
		}
		t.held = append(t.held, pending{id: id, reason: reason, seq: f.seq, failed: e.failed})
	}
	for i := range f.tables {
		if t := &f.tables[i]; len(t.held) > 2*t.live+1024 {
			t.compact()
		}
	}
}

// dropOldest drops the n oldest outcomes held, over all tables.
func (f *flusher) dropOldest(n int) {
	if n <= 0 {
		return
	}
	next := make([]int, len(f.tables)) // per table, the first entry not dropped
	for ; n > 0; n-- {
		var oldest *tableState
		at := -1
		for i := range f.tables {
			t := &f.tables[i]
			for next[i] < len(t.held) && !t.isLive(&t.held[next[i]]) {
				next[i]++
			}
			if next[i] < len(t.held) && (oldest == nil || t.held[next[i]].seq < oldest.held[next[at]].seq) {
				oldest, at = t, i
			}
		}
		if oldest == nil {
			break
		}
		delete(oldest.latest, oldest.held[next[at]].id)
		oldest.live--
		f.live--
		next[at]++
		f.w.dropped.Add(1)
	}
	for i := range f.tables {
		if next[i] > 0 {
			f.tables[i].compact()
		}
	}
}

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

// failed schedules t's next attempt after err, and logs err at most once
// per cause and table per minute.
func (f *flusher) failed(ctx context.Context, t *tableState, err error) {
	f.lastErr = err
	if ctx.Err() != nil {
		return // Run is stopping: not the database's fault
	}
	f.w.failures.Add(1)
	t.failing++
	cause, refused := classify(err)
	now := time.Now()
	wait := t.backoff
	if refused {
		wait = f.w.refusedRetry
		t.sql = nil // the table may have changed by the next attempt
	} else {
		t.backoff = min(2*t.backoff, f.w.retryMax)
	}
	t.due = now.Add(wait)
	ok, suppressed := f.limit.allow(t.quoted+" "+cause, now)
	if !ok {
		return
	}
	attrs := []any{"table", t.quoted, "err", err, "pending", t.live, "failed_attempts", t.failing,
		"retry_in", wait, "suppressed", suppressed}
	if refused {
		f.w.log.Error("write-back refused; the events are in Kafka, but their rows keep their old status until this is fixed",
			append(attrs, "fix", t.hint(err))...)
	} else {
		f.w.log.Warn("write-back failed; retrying", attrs...)
	}
}

// classify names err's cause for the log (its SQLSTATE, or what failed)
// and says whether retrying soon cannot help: SQLSTATE class 42 (a missing
// table, column or privilege) or 22 (a value the column does not accept),
// or a table or column the look-up did not find.
func classify(err error) (cause string, refused bool) {
	var pgErr *pgconn.PgError
	var se *schemaError
	switch {
	case errors.As(err, &pgErr):
		class := pgErr.Code[:min(2, len(pgErr.Code))]
		return pgErr.Code, class == "42" || class == "22"
	case errors.As(err, &se):
		return "missing", true
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", false
	default:
		return "connection", false
	}
}

// hint says what to do about an error that retries will not fix.
func (t *tableState) hint(err error) string {
	c := &t.Columns
	var cols []string
	for _, col := range []string{c.StatusColumn, c.DeliveredAtColumn, c.ErrorColumn} {
		if col != "" {
			cols = append(cols, pgx.Identifier{col}.Sanitize())
		}
	}
	grant := fmt.Sprintf("GRANT SELECT (%s, %s), UPDATE (%s) ON %s TO <the relay's role>",
		pgx.Identifier{t.IDColumn}.Sanitize(), cols[0], strings.Join(cols, ", "), t.quoted)
	var pgErr *pgconn.PgError
	var se *schemaError
	switch {
	case errors.As(err, &se) && se.missing == nil, errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return "create the table, or take write_back off it in the config; if it exists, " + grant
	case errors.As(err, &se), errors.As(err, &pgErr) && pgErr.Code == "42703":
		return "add the column to the table, or correct write_back's column names in the config"
	case errors.As(err, &pgErr) && pgErr.Code == "42501":
		return grant
	default:
		return "check write_back in the config against the table: a status value the status column's type " +
			"does not accept, or a delivered-at column that is not a timestamp"
	}
}

// logDrops logs outcomes dropped since the last such line, at most once
// a minute.
func (f *flusher) logDrops() {
	d := f.w.dropped.Load()
	if d == f.loggedDrops {
		return
	}
	if ok, _ := f.limit.allow("dropped", time.Now()); !ok {
		return
	}
	f.w.log.Warn("write-back dropped outcomes: more were waiting than it may hold; "+
		"their rows keep their old status (the events are in Kafka)",
		"dropped", d-f.loggedDrops, "dropped_total", d, "max_pending", f.w.cfg.MaxPending)
	f.loggedDrops = d
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

// logLimiter lets a line of each key through at most once per interval,
// counting the ones it held back.
type logLimiter struct {
	every      time.Duration
	last       map[string]time.Time
	suppressed map[string]int
}

// allow reports whether a line of key may be logged now, and how many were
// held back since the last one.
func (l *logLimiter) allow(key string, now time.Time) (bool, int) {
	if t, ok := l.last[key]; ok && now.Sub(t) < l.every {
		l.suppressed[key]++
		return false, 0
	}
	n := l.suppressed[key]
	delete(l.suppressed, key)
	l.last[key] = now
	return true, n
}
