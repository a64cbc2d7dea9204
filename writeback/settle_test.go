package writeback

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// doneLog records which outcomes were settled, in order.
type doneLog struct {
	mu  sync.Mutex
	ids []string
}

type doneFor struct {
	log *doneLog
	id  string
}

func (d doneFor) WrittenBack() {
	d.log.mu.Lock()
	d.log.ids = append(d.log.ids, d.id)
	d.log.mu.Unlock()
}

func (l *doneLog) for_(id string) Done { return doneFor{l, id} }

func (l *doneLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(slices.Values(l.ids))
}

// TestDoneOnlyOnceWritten: an outcome's Done is told only once its row
// took it, never while the database refuses the statement; a superseded
// outcome's with the outcome that superseded it.
func TestDoneOnlyOnceWritten(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	table := outboxTable(t, ctx, pool, "outbox", "a", "b", "c")
	db := &countingDB{DB: pool}
	w, err := New(db, Config{Tables: []Table{table}})
	if err != nil {
		t.Fatal(err)
	}
	var done doneLog
	db.down.Store(true)
	w.Delivered(0, []byte("a"), done.for_("a1"))
	w.Delivered(0, []byte("b"), done.for_("b"))
	w.Delivered(0, nil, done.for_("no id")) // no row to write: settled at once
	flushNow(ctx, w)
	if got := done.got(); !slices.Equal(got, []string{"no id"}) {
		t.Fatalf("settled %q while the database was down, want only the event without an id", got)
	}
	w.Delivered(0, []byte("a"), done.for_("a2")) // sent again: supersedes a1
	flushNow(ctx, w)
	if got := done.got(); !slices.Equal(got, []string{"no id"}) {
		t.Fatalf("settled %q, want the superseded outcome a1 to wait for a2's row", got)
	}
	db.down.Store(false)
	w.Delivered(0, []byte("c"), done.for_("c"))
	flushNow(ctx, w)
	if got := done.got(); !slices.Equal(got, []string{"a1", "a2", "b", "c", "no id"}) {
		t.Fatalf("settled %q once written, want every outcome", got)
	}
	if got := states(t, ctx, pool, "outbox", "status", "error"); fmt.Sprint(got) != "map[a:DELIVERED b:DELIVERED c:DELIVERED]" {
		t.Fatalf("rows %v", got)
	}
	if s := w.Stats(); s.Pending != 0 {
		t.Fatalf("stats %+v, want nothing pending", s)
	}
}

// TestRefusedRowIsGivenUp: a row that a trigger or a constraint refuses
// does not hold back the other rows of its statement; it is logged with
// its id, counted, and settled. A value the table refuses for every row
// (a CHECK on the status column) is not a row's fault: those outcomes are
// held, unsettled, and retried.
func TestRefusedRowIsGivenUp(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	const n = 40
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("id-%02d", i)
	}
	cases := []struct {
		name, ddl      string
		refused        []string // the rows given up, by id
		pending        int      // outcomes held unsettled
		wantLog, cause string
	}{
		{name: "trigger", ddl: `CREATE FUNCTION %[1]s_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.id IN ('id-00', 'id-17') AND NEW.status = 'DELIVERED' THEN RAISE EXCEPTION 'row % is frozen', NEW.id; END IF; RETURN NEW; END $$;
			CREATE TRIGGER refuse BEFORE UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[1]s_refuse()`,
			refused: []string{"id-00", "id-17"}, wantLog: "write-back refused row", cause: "P0001"},
		{name: "check on another column", ddl: `ALTER TABLE %[1]s ADD COLUMN amount int NOT NULL DEFAULT 1;
			UPDATE %[1]s SET amount = -1 WHERE id = 'id-39';
			ALTER TABLE %[1]s ADD CONSTRAINT positive CHECK (amount > 0 OR status = 'PENDING') NOT VALID`,
			refused: []string{"id-39"}, wantLog: "write-back refused row", cause: "23514"},
		{name: "check on the value", ddl: `ALTER TABLE %[1]s ADD CONSTRAINT known CHECK (status IN ('PENDING', 'SENT'))`,
			pending: n, wantLog: "write-back refused for every row tried", cause: "23514"},
		{name: "a trigger's cast of one row", ddl: `CREATE FUNCTION %[1]s_cast() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.id = 'id-00' AND NEW.status = 'DELIVERED' THEN PERFORM 'x'::int; END IF; RETURN NEW; END $$;
			CREATE TRIGGER cast_row BEFORE UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[1]s_cast()`,
			refused: []string{"id-00"}, wantLog: "write-back refused row", cause: "22P02"},
		{name: "a lock timeout is not the row's fault", ddl: `CREATE FUNCTION %[1]s_lock() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.id = 'id-17' THEN RAISE EXCEPTION 'lock timeout' USING ERRCODE = 'lock_not_available'; END IF; RETURN NEW; END $$;
			CREATE TRIGGER lock_row BEFORE UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[1]s_lock()`,
			pending: n, wantLog: "write-back failed; retrying", cause: "55P03"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("outbox_%d", i)
			table := outboxTable(t, ctx, pool, name, ids...)
			exec(t, ctx, pool, fmt.Sprintf(tc.ddl, name))
			log := &syncbuf.Buffer{}
			w, err := New(pool, Config{Tables: []Table{table}, Logger: slog.New(slog.NewTextHandler(log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			var done doneLog
			for _, id := range ids {
				w.Delivered(0, []byte(id), done.for_(id))
			}
			flushNow(ctx, w)
			rows := states(t, ctx, pool, name, "status", "error")
			for _, id := range ids {
				want := "DELIVERED"
				if slices.Contains(tc.refused, id) || tc.pending > 0 {
					want = "PENDING"
				}
				if rows[id] != want {
					t.Fatalf("row %s says %q, want %q", id, rows[id], want)
				}
			}
			s := w.Stats()
			if s.Refused != int64(len(tc.refused)) || s.Pending != tc.pending || len(done.got()) != n-tc.pending {
				t.Fatalf("stats %+v, %d settled; want %d refused, %d pending", s, len(done.got()), len(tc.refused), tc.pending)
			}
			if !strings.Contains(log.String(), tc.wantLog) || !strings.Contains(log.String(), tc.cause) {
				t.Fatalf("log lacks %q (%s):\n%s", tc.wantLog, tc.cause, log)
			}
			if len(tc.refused) > 0 && (!strings.Contains(log.String(), "level=ERROR") || !strings.Contains(log.String(), "id="+tc.refused[0])) {
				t.Fatalf("the refused row %s is not logged at error:\n%s", tc.refused[0], log)
			}
		})
	}
}

// doneOfTxn is a Done that names the transaction that inserted its row.
type doneOfTxn struct {
	doneFor
	xid uint32
}

func (d doneOfTxn) Xid() uint32 { return d.xid }

// TestRowNotVisibleYetWaits: logical decoding hands a transaction on as
// soon as its commit record is flushed, a moment before other sessions
// see its rows, so an outcome can reach the Writer before its row. An
// outcome whose row is not visible, because its inserting transaction is
// not, is not settled until the row is written; one whose row was deleted
// by a transaction that is visible (here, the one that inserted it) is
// settled, as is one whose transaction is unknown.
func TestRowNotVisibleYetWaits(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	table := outboxTable(t, ctx, pool, "outbox", "seen")
	w, err := New(pool, Config{Tables: []Table{table}})
	if err != nil {
		t.Fatal(err)
	}
	xidOf := func(db DB) uint32 {
		return uint32(scalar[int64](t, ctx, db, "SELECT (pg_current_xact_id()::text::bigint % 4294967296)"))
	}
	late, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback(ctx)
	exec(t, ctx, late, "INSERT INTO outbox (id) VALUES ('late')")
	lateXid := xidOf(late)
	gone, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, ctx, gone, "INSERT INTO outbox (id) VALUES ('gone')")
	goneXid := xidOf(gone)
	exec(t, ctx, gone, "DELETE FROM outbox WHERE id = 'gone'")
	if err := gone.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	var done doneLog
	w.Delivered(0, []byte("seen"), doneOfTxn{doneFor{&done, "seen"}, 1})
	w.Delivered(0, []byte("late"), doneOfTxn{doneFor{&done, "late"}, lateXid})
	w.Delivered(0, []byte("gone"), doneOfTxn{doneFor{&done, "gone"}, goneXid})
	w.Delivered(0, []byte("unknown"), done.for_("unknown"))
	flushNow(ctx, w)
	if got := done.got(); !slices.Equal(got, []string{"gone", "seen", "unknown"}) {
		t.Fatalf("settled %q while the row of late is not visible, want gone, seen and unknown", got)
	}
	if s := w.Stats(); s.Pending != 1 || s.NotVisible != 1 {
		t.Fatalf("stats %+v, want late pending, counted once as not visible", s)
	}
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	flushNow(ctx, w)
	if got := done.got(); !slices.Equal(got, []string{"gone", "late", "seen", "unknown"}) {
		t.Fatalf("settled %q once late's row is visible, want every outcome", got)
	}
	if got := states(t, ctx, pool, "outbox", "status", "error"); fmt.Sprint(got) != "map[late:DELIVERED seen:DELIVERED]" {
		t.Fatalf("rows %v", got)
	}

	// One whose transaction never becomes visible (lost in a failover) is
	// given up once it has waited notVisibleFor.
	lost, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lost.Rollback(ctx)
	exec(t, ctx, lost, "INSERT INTO outbox (id) VALUES ('lost')")
	w.notVisibleFor = 0
	w.Delivered(0, []byte("lost"), doneOfTxn{doneFor{&done, "lost"}, xidOf(lost)})
	flushNow(ctx, w)
	if s := w.Stats(); s.Pending != 1 || s.NotVisible != 2 {
		t.Fatalf("stats %+v, want lost pending, counted as not visible", s)
	}
	flushNow(ctx, w)
	if got := done.got(); !slices.Contains(got, "lost") || w.Stats().Pending != 0 {
		t.Fatalf("settled %q, %d pending: want lost given up once it waited notVisibleFor", got, w.Stats().Pending)
	}
}

// TestRowThatIgnoresTheUpdateIsGivenUp: a row that exists but that the
// UPDATE leaves unchanged without an error (a BEFORE UPDATE trigger that
// returns NULL) is written again at the next flushes, in case it became
// visible after a statement began, then given up as a refused row is:
// counted and settled, so that it holds nothing back.
func TestRowThatIgnoresTheUpdateIsGivenUp(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	table := outboxTable(t, ctx, pool, "outbox", "ignored", "taken")
	exec(t, ctx, pool, `CREATE FUNCTION ignore_update() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$`)
	exec(t, ctx, pool, `CREATE TRIGGER ignore_update BEFORE UPDATE ON outbox FOR EACH ROW WHEN (OLD.id = 'ignored') EXECUTE FUNCTION ignore_update()`)
	w, err := New(pool, Config{Tables: []Table{table}})
	if err != nil {
		t.Fatal(err)
	}
	var done doneLog
	w.Delivered(0, []byte("ignored"), doneOfTxn{doneFor{&done, "ignored"}, 1})
	w.Delivered(0, []byte("taken"), doneOfTxn{doneFor{&done, "taken"}, 1})
	for flush := 1; flush < unchangedTries; flush++ {
		flushNow(ctx, w)
		if got := done.got(); !slices.Equal(got, []string{"taken"}) {
			t.Fatalf("flush %d settled %q, want only taken", flush, got)
		}
	}
	flushNow(ctx, w)
	if got := done.got(); !slices.Equal(got, []string{"ignored", "taken"}) {
		t.Fatalf("settled %q after %d flushes, want the ignored row given up", got, unchangedTries)
	}
	if s := w.Stats(); s.Refused != 1 || s.Pending != 0 || s.NotVisible != 0 {
		t.Fatalf("stats %+v, want the ignored row refused once, nothing pending", s)
	}
	if got := states(t, ctx, pool, "outbox", "status", "error"); fmt.Sprint(got) != "map[ignored:PENDING taken:DELIVERED]" {
		t.Fatalf("rows %v", got)
	}
}

// TestSearchSettlesEachOutcomeOnce: a statement a row refuses is split in
// halves; a half written again once the table took the value must not
// name again an outcome its first try settled (here a deleted row's), or
// the writer counts it out twice and then leaves a table's last outcome
// waiting.
func TestSearchSettlesEachOutcomeOnce(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	table := outboxTable(t, ctx, pool, "outbox", "a", "b", "c", "d", "e")
	exec(t, ctx, pool, `CREATE FUNCTION refuse_a() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'refused by the test'; END$$`)
	exec(t, ctx, pool, `CREATE TRIGGER refuse_a BEFORE UPDATE ON outbox FOR EACH ROW WHEN (OLD.id = 'a') EXECUTE FUNCTION refuse_a()`)
	exec(t, ctx, pool, "DELETE FROM outbox WHERE id = 'b'")
	w, err := New(pool, Config{Tables: []Table{table}})
	if err != nil {
		t.Fatal(err)
	}
	var done doneLog
	for _, id := range []string{"a", "b", "c", "d"} {
		w.Delivered(0, []byte(id), done.for_(id))
	}
	flushNow(ctx, w)
	if got, s := done.got(), w.Stats(); !slices.Equal(got, []string{"a", "b", "c", "d"}) || s.Pending != 0 || s.Refused != 1 {
		t.Fatalf("settled %q, stats %+v; want every outcome settled once, a refused, nothing pending", got, s)
	}
	w.Delivered(0, []byte("e"), done.for_("e"))
	flushNow(ctx, w)
	if got := done.got(); !slices.Contains(got, "e") {
		t.Fatalf("settled %q: the next outcome waits", got)
	}
}
