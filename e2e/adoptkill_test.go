package e2e

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAdoptionHealsAfterSIGKILL: the first run of a table whose write-back
// lists pending values (or `migrate --config` of it) creates the slot and
// adopts the pending rows in its snapshot; it is killed with SIGKILL while
// it adopts (the slot exists, the adopting INSERT runs, no checkpoint row
// yet). The same command started again heals by itself: it recognises the
// slot it created and never recorded, creates it again and adopts again,
// and every pending row is sent, once, with no one dropping the slot. How
// long that takes is the poller's pace (the parked benchmark measures it),
// not this test's claim: the deadline is generous. The test fails on a relay that refuses the slot
// it never recorded, and on a migrate that records it without adopting.
//
// The test holds the adoption's INSERT on a lock until the kill, so that
// the kill lands in the window whatever the machine's speed.
// CDC_RELAY_TEST_ADOPTKILL_ROWS sets the rows (3,000) and
// CDC_RELAY_TEST_ADOPTKILL_LOCK=0 lets the adoption run free (then the
// rows must take long enough to adopt, 200,000 a few seconds); the
// deadline, two minutes, grows by ten seconds per 1,000 rows beyond 3,000
// (the poller's pace, some 300 rows a second, on a busy machine).
func TestAdoptionHealsAfterSIGKILL(t *testing.T) {
	parallel(t)
	rows := 3000
	if v := os.Getenv("CDC_RELAY_TEST_ADOPTKILL_ROWS"); v != "" {
		var err error
		if rows, err = strconv.Atoi(v); err != nil {
			t.Fatalf("CDC_RELAY_TEST_ADOPTKILL_ROWS=%q: %v", v, err)
		}
	}
	for _, by := range []string{"run", "migrate"} {
		t.Run("slot_by_"+by, func(t *testing.T) {
			e := newEnv(t)
			args := e.pendingWriteBackArgs()
			migrate := []string{"migrate", "--config", args[2], "--postgres-url", e.url, "--slot", e.slot}
			// prepare's slot is not this config's: the command killed
			// creates the slot, and adopts.
			mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
			mustExec(t, e.conn, "DELETE FROM cdc_relay_checkpoint")
			mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
				SELECT 'order', 'k' || (i % 1000), 'Created', json_build_object('n', i) FROM generate_series(1, $1) AS i`, rows)
			first := args
			if by == "migrate" {
				first = migrate
			}
			e.killWhileAdopting(first)

			restart := time.Now()
			if by == "migrate" {
				out, err := exec.Command(relayBin, migrate...).CombinedOutput()
				if err != nil || !saysAdopted(string(out), rows) || !strings.Contains(string(out), "stopped before it recorded") {
					t.Fatalf("migrate again after the kill: %v; want it to say it created the slot again, and to adopt %d rows:\n%s", err, rows, out)
				}
			}
			p := e.spawnRelayArgs(relayBin, args...)
			deadline := 2*time.Minute + time.Duration(max(rows-3000, 0))*10*time.Millisecond
			e.waitStatuses("every pending row is delivered after the restart", deadline, func(c statusCounts) bool {
				if !p.Running() {
					t.Fatalf("the restarted relay exited: %v\n%s", p.Err(), p.Log())
				}
				return c.delivered == rows
			})
			t.Logf("%d pending rows delivered %v after the restart", rows, time.Since(restart).Round(time.Millisecond))
			e.checkOnce(e.topic("order"), e.outboxIDs("true"))
			if log := p.Log(); strings.Contains(log, "never recorded it") {
				t.Errorf("the restarted relay refused the slot it created:\n%s", log)
			}
			p.stop(30 * time.Second)
		})
	}
}

// TestAdoptionHealsAfterAPostgresRestart: PostgreSQL restarts (immediate
// mode) while the first run adopts: the adoption fails with its
// connection, and so does the drop of the new slot that would undo it.
// The relay does not stop on that: it tries again, with backoff, and once
// PostgreSQL is back it creates the slot again and adopts, and every
// pending row is sent once, with no one dropping the slot.
func TestAdoptionHealsAfterAPostgresRestart(t *testing.T) {
	parallel(t)
	const rows = 5000
	e, pg := newEnvOwnCluster(t)
	args := e.pendingWriteBackArgs()
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	mustExec(t, e.conn, "DELETE FROM cdc_relay_checkpoint")
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'order', 'k' || (i % 100), 'Created', json_build_object('n', i) FROM generate_series(1, $1) AS i`, rows)
	e.holdAdoption()
	p := e.spawnRelayArgs(relayBin, args...)
	e.waitFor("the first run adopts the pending rows", 60*time.Second, func() bool {
		if !p.Running() {
			t.Fatalf("the relay exited before it adopted: %v\n%s", p.Err(), p.Log())
		}
		return e.adopting()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pg.Restart(ctx, "immediate"); err != nil {
		t.Fatalf("restart PostgreSQL: %v", err)
	}
	restart := time.Now()
	e.conn = mustConnect(t, e.url)
	t.Cleanup(func() { e.conn.Close(context.Background()) })
	e.waitStatuses("every pending row is delivered after PostgreSQL's restart", 60*time.Second, func(c statusCounts) bool {
		if !p.Running() {
			t.Fatalf("the relay exited after PostgreSQL's restart: %v\n%s", p.Err(), p.Log())
		}
		return c.delivered == rows
	})
	t.Logf("%d pending rows delivered %v after PostgreSQL's restart", rows, time.Since(restart).Round(time.Millisecond))
	e.checkOnce(e.topic("order"), e.outboxIDs("true"))
	p.stop(30 * time.Second)
}

// killWhileAdopting runs the binary with args (a run or a migrate that
// creates the slot and adopts) and kills it with SIGKILL while it adopts,
// with the adoption held on a lock (unless CDC_RELAY_TEST_ADOPTKILL_LOCK=0).
// It fails the test unless the slot exists then, without its checkpoint
// row.
func (e *env) killWhileAdopting(args []string) {
	e.t.Helper()
	unlock := func() {}
	if os.Getenv("CDC_RELAY_TEST_ADOPTKILL_LOCK") != "0" {
		unlock = e.holdAdoption()
	}
	p := e.spawnRelayArgs(relayBin, args...)
	e.waitFor("the slot's creator adopts the pending rows", 60*time.Second, func() bool {
		if !p.Running() {
			e.t.Fatalf("%s exited before it adopted: %v\n%s", args[0], p.Err(), p.Log())
		}
		return e.adopting()
	})
	p.Kill()
	unlock()
	if e.hasCheckpointRow() {
		e.t.Fatalf("the adoption committed before the kill: the test proves nothing; hold it (CDC_RELAY_TEST_ADOPTKILL_LOCK) or adopt more rows")
	}
	if !e.slotExists() {
		e.t.Fatalf("no slot after the kill during the adoption")
	}
}

// holdAdoption makes each INSERT into the status table wait, until
// unlock, for an advisory lock that a connection of the test's own holds
// (a statement trigger): the switch-over's INSERT waits meanwhile, and
// the migrations, which insert nothing, do not.
func (e *env) holdAdoption() (unlock func()) {
	e.t.Helper()
	mustExec(e.t, e.conn, `CREATE OR REPLACE FUNCTION adoptkill_hold() RETURNS trigger LANGUAGE plpgsql AS
		$$BEGIN PERFORM pg_advisory_xact_lock_shared(4141); RETURN NULL; END$$`)
	mustExec(e.t, e.conn, `CREATE TRIGGER adoptkill_hold BEFORE INSERT ON outbox_delivery
		FOR EACH STATEMENT EXECUTE FUNCTION adoptkill_hold()`)
	c := mustConnect(e.t, e.url)
	mustExec(e.t, c, "SELECT pg_advisory_lock(4141)")
	var once sync.Once
	unlock = func() { once.Do(func() { c.Close(context.Background()) }) }
	e.t.Cleanup(unlock)
	return unlock
}

// pendingWriteBackArgs are writeBackArgs with the pending value listed
// (the switch-over: the first run adopts the rows that hold it), after
// `migrate --config --no-slot` of that config.
func (e *env) pendingWriteBackArgs() []string {
	e.t.Helper()
	args := e.writeBackArgs()
	path := args[2]
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "      delivered_at_column: delivered_at\n",
		"      delivered_at_column: delivered_at\n      pending: ["+wbPending+"]\n", 1)), 0o600); err != nil {
		e.t.Fatal(err)
	}
	migrate := []string{"migrate", "--config", path, "--postgres-url", e.url, "--slot", e.slot, "--no-slot"}
	if out, err := exec.Command(relayBin, migrate...).CombinedOutput(); err != nil {
		e.t.Fatalf("migrate --no-slot: %v\n%s", err, out)
	}
	return args
}

// adopting reports whether a session of the test's database runs the
// switch-over's INSERT into the status table while the slot exists.
func (e *env) adopting() bool {
	e.t.Helper()
	var n int
	err := e.conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'active' AND query LIKE 'INSERT INTO %reload%'
			AND EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)`, e.slot).Scan(&n)
	if err != nil {
		e.t.Fatal(err)
	}
	return n > 0
}

// hasCheckpointRow reports whether the test's slot has its checkpoint row.
func (e *env) hasCheckpointRow() bool {
	e.t.Helper()
	var ok bool
	if err := e.conn.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM cdc_relay_checkpoint WHERE slot_name = $1)", e.slot).Scan(&ok); err != nil {
		e.t.Fatal(err)
	}
	return ok
}
