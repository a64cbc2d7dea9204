package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Write-back is lossless: a position is confirmed only once every event
// before it is in Kafka and its outcome is written to its row, so a relay
// killed while outcomes wait sends those events again after the restart
// and writes them then. A row that refuses its outcome (a trigger, a CHECK)
// is found, logged and counted; the rows written with it are not held
// back.

// Write-back's status values in these tests.
const (
	wbPending   = "PENDING"
	wbDelivered = "DELIVERED"
	wbFailed    = "FAILED"
)

// writeBackArgs gives the test's outbox table a status column (PENDING
// until written back) and a delivered-at column, writes a config file that
// relays the table with write-back to them, and returns the arguments of
// `run --config` for the test's database, broker and slot.
func (e *env) writeBackArgs() []string {
	e.t.Helper()
	mustExec(e.t, e.conn, `ALTER TABLE outbox ADD COLUMN status text NOT NULL DEFAULT '`+wbPending+`',
		ADD COLUMN delivered_at timestamptz`)
	path := filepath.Join(e.t.TempDir(), "relay.yaml")
	yaml := `tables:
  - table: public.outbox
    id: id
    key: aggregate_id
    value: payload
    topic: "` + e.prefix + `.{aggregate_type}"
    write_back:
      status_column: status
      delivered: ` + wbDelivered + `
      failed: ` + wbFailed + `
      delivered_at_column: delivered_at
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return []string{"run", "--config", path, "--postgres-url", e.url,
		"--kafka-brokers", strings.Join(e.brokers, ","), "--slot", e.slot,
		"--status-interval", "200ms", "--metrics-addr", "127.0.0.1:0"}
}

// statusCounts is how many outbox rows hold each status.
type statusCounts struct {
	pending, delivered, other int
	undated                   int // delivered without a delivered-at time
}

func (c statusCounts) String() string {
	return fmt.Sprintf("%d %s, %d %s (%d of them without delivered_at), %d other",
		c.pending, wbPending, c.delivered, wbDelivered, c.undated, c.other)
}

// statuses counts the outbox rows by status.
func (e *env) statuses() statusCounts {
	e.t.Helper()
	var c statusCounts
	err := e.conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status = $1), count(*) FILTER (WHERE status = $2),
		count(*) FILTER (WHERE status NOT IN ($1, $2)), count(*) FILTER (WHERE status = $2 AND delivered_at IS NULL) FROM outbox`,
		wbPending, wbDelivered).Scan(&c.pending, &c.delivered, &c.other, &c.undated)
	if err != nil {
		e.t.Fatalf("count the outbox rows by status: %v", err)
	}
	return c
}

// waitStatuses polls the outbox's status counts until done holds, and
// fails the test after timeout naming the counts it saw last.
func (e *env) waitStatuses(what string, timeout time.Duration, done func(statusCounts) bool) statusCounts {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c := e.statuses()
		if done(c) {
			return c
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting until %s: the outbox holds %s", timeout, what, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitOtherClientsGone waits until no client but the test's own
// connection is in the test's database: the statements of a killed relay
// have ended (a backend finishes its statement before it notices its
// client is gone).
func (e *env) waitOtherClientsGone() {
	e.t.Helper()
	e.waitFor("the killed relay's sessions end", 30*time.Second, func() bool {
		var n int
		if err := e.conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		return n == 0
	})
}

// TestWriteBackSurvivesKill: a backlog of 20,000 events on a table with
// write-back; the relay is killed with SIGKILL while outcomes wait to be
// written (each write-back statement is slowed to take a second more, so
// that the rows are written over seconds), and started again, in both
// delivery modes. The slot never confirms past an event whose row is still
// PENDING, every row ends DELIVERED with its time, every event is in Kafka
// (once, to a read_committed consumer, in exactly-once delivery), and the
// relay's memory stays bounded.
func TestWriteBackSurvivesKill(t *testing.T) {
	// Alone: it asserts peak memory.
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"at-least-once", nil},
		// The Kafka transactions commit before their rows are written:
		// the topic is ahead of the slot at the kill (issue 41).
		{"exactly-once", exactlyOnce},
	} {
		t.Run(tc.name, func(t *testing.T) { writeBackSurvivesKill(t, tc.flags) })
	}
}

// writeBackSurvivesKill is TestWriteBackSurvivesKill in the delivery mode
// that flags set.
func writeBackSurvivesKill(t *testing.T, flags []string) {
	const (
		rows     = 20_000
		perTx    = 2_000
		rssBound = 200 << 20
		deadline = 90 * time.Second // for every row to be written back after the restart
	)
	e := newEnv(t)
	args := append(e.writeBackArgs(), flags...)
	mustExec(t, e.conn, `CREATE FUNCTION slow_write_back() RETURNS trigger LANGUAGE plpgsql
		AS $$BEGIN PERFORM pg_sleep(1); RETURN NULL; END$$`)
	mustExec(t, e.conn, `CREATE TRIGGER slow_write_back AFTER UPDATE ON outbox
		FOR EACH STATEMENT EXECUTE FUNCTION slow_write_back()`)
	for i := 0; i < rows; i += perTx {
		mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT 'order', 'k' || (g % 100), 'OrderPlaced', jsonb_build_object('n', g)
			FROM generate_series($1::int, $2::int) g`, i, i+perTx-1)
	}
	ids := e.outboxIDs("true")
	if len(ids) != rows {
		t.Fatalf("%d rows in the outbox, want %d", len(ids), rows)
	}
	end := e.lsn(insertLSN)
	topic := e.topic("order")
	cl := e.client()

	p := e.startRelayArgs(relayBin, args...)
	e.waitFor("some events arrive and some rows are written back", 60*time.Second, func() bool {
		e.checkWriteAhead()
		return e.totalRecords(cl, topic) >= 2000 && e.statuses().delivered >= 1000
	})
	rss := []int64{p.peakRSS()} // the last reading before the kill
	p.Kill()
	e.checkWriteAhead()
	killedAt := e.totalRecords(cl, topic)
	e.waitOtherClientsGone()
	atKill := e.statuses()
	t.Logf("killed with %d records in Kafka (peak RSS %.1f MiB); the outbox then held %s", killedAt, float64(rss[0])/(1<<20), atKill)
	if atKill.pending == 0 {
		t.Fatalf("every row was written back before the kill: the kill came too late to prove anything")
	}

	restarted := time.Now()
	p = e.startRelayArgs(relayBin, args...)
	e.waitFor("the slot confirms past the last event", deadline, func() bool { return e.lsn(slotLSN) >= end })
	if c := e.statuses(); c.pending > 0 {
		t.Errorf("the slot confirmed past every event while the outbox held %s: a position passed outcomes not written", c)
	}
	c := e.waitStatuses("no row is left "+wbPending, deadline-time.Since(restarted), func(c statusCounts) bool { return c.pending == 0 })
	if c.delivered != rows || c.undated != 0 {
		t.Errorf("the outbox holds %s, want all %d rows %s with delivered_at", c, rows, wbDelivered)
	}
	seen := e.readIDs(topic, ids, 60*time.Second)
	if len(flags) > 0 {
		requireEachOnce(t, topic, e.countCommitted(topic, len(ids), time.Minute), ids)
	}
	rss = append(rss, p.peakRSS())
	t.Logf("%d records in Kafka for %d events; peak RSS %.1f MiB after the restart", seen, rows, float64(rss[1])/(1<<20))
	for i, r := range rss {
		if r >= rssBound {
			t.Errorf("run %d: relay peak RSS %d MiB, want under %d MiB", i+1, r>>20, rssBound>>20)
		}
	}
	p.stop(30 * time.Second)
}

// refusedMetric counts the rows that refused their outcome.
const refusedMetric = "cdc_relay_writeback_refused_rows_total"

// TestWriteBackRefusedRowDoesNotBlock: a trigger refuses one row's
// DELIVERED status. The rows written in the same statements are written
// all the same; the refused row stays PENDING, is logged at error level by
// its id and counted once; every event is in Kafka and the slot confirms
// past them all.
func TestWriteBackRefusedRowDoesNotBlock(t *testing.T) {
	parallel(t)
	const (
		rows  = 3_000
		perTx = 1_000
		bad   = 1_500 // the refused row's place, amid the second transaction
	)
	e := newEnv(t)
	args := e.writeBackArgs()
	var refused string
	if err := e.conn.QueryRow(context.Background(), "SELECT gen_random_uuid()::text").Scan(&refused); err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.conn, `CREATE FUNCTION refuse_delivery() RETURNS trigger LANGUAGE plpgsql
		AS $$BEGIN RAISE EXCEPTION 'refused by the test trigger'; END$$`)
	mustExec(t, e.conn, fmt.Sprintf(`CREATE TRIGGER refuse_delivery BEFORE UPDATE ON outbox FOR EACH ROW
		WHEN (NEW.id = '%s' AND NEW.status = '%s') EXECUTE FUNCTION refuse_delivery()`, refused, wbDelivered))
	for i := 0; i < rows; i += perTx {
		mustExec(t, e.conn, `INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
			SELECT CASE WHEN g = $3 THEN $4::uuid ELSE gen_random_uuid() END, 'order', 'k' || (g % 10), 'OrderPlaced', jsonb_build_object('n', g)
			FROM generate_series($1::int, $2::int) g`, i, i+perTx-1, bad, refused)
	}
	ids := e.outboxIDs("true")
	if len(ids) != rows {
		t.Fatalf("%d rows in the outbox, want %d", len(ids), rows)
	}
	end := e.lsn(insertLSN)

	p := e.startRelayArgs(relayBin, args...)
	c := e.waitStatuses(fmt.Sprintf("every row but the refused one is %s", wbDelivered), 45*time.Second,
		func(c statusCounts) bool { return c.delivered == rows-1 })
	if c.pending != 1 || c.other != 0 || c.undated != 0 {
		t.Errorf("the outbox holds %s, want %d rows %s with delivered_at and 1 %s", c, rows-1, wbDelivered, wbPending)
	}
	var line string
	e.waitFor("the relay logs and counts the refused row", 30*time.Second, func() bool {
		line = refusedLine(p.Log(), refused)
		_, families := p.scrape()
		return line != "" && value(families, refusedMetric) >= 1
	})
	for _, want := range []string{"table=", "outbox", "err=", "refused by the test trigger"} {
		if !strings.Contains(line, want) {
			t.Errorf("the refused row's log line does not hold %q:\n%s", want, line)
		}
	}
	e.waitFor("the slot confirms past the last event", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	seen := e.readIDs(e.topic("order"), ids, 60*time.Second)
	t.Logf("%d records in Kafka for %d events", seen, rows)

	// Later flushes neither write the refused row nor count it again.
	var status string
	if err := e.conn.QueryRow(context.Background(), "SELECT status FROM outbox WHERE id = $1", refused).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != wbPending {
		t.Errorf("the refused row's status is %q, want %q", status, wbPending)
	}
	if _, families := p.scrape(); value(families, refusedMetric) != 1 {
		t.Errorf("%s is %v, want 1", refusedMetric, value(families, refusedMetric))
	}
	p.stop(30 * time.Second)
}

// refusedLine returns the first line of log that reports, at error level,
// the write-back row with id refused; "" when there is none.
func refusedLine(log, id string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "write-back refused row") &&
			strings.Contains(line, "id="+id) {
			return line
		}
	}
	return ""
}

// TestRecoverWritesBack: `recover` publishes again the rows of a gap in
// the WAL and, on a table with write-back, writes each back as delivered:
// the row committed while the slot did not exist no longer says pending.
func TestRecoverWritesBack(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	args := e.writeBackArgs()
	path := args[2]
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "    value: payload\n", "    value: payload\n    timestamp: created_at\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	relay := e.startRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	e.waitStatuses("the first row is written back", 30*time.Second, func(c statusCounts) bool { return c.delivered == 1 })
	relay.stop(30 * time.Second)

	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	insert(t, e.conn, "order", "k", "Lost", `{"n": "lost"}`)
	recoverArgs := append([]string{"recover"}, withoutFlag(args[1:], "--metrics-addr")...)
	out, err := exec.Command(relayBin, recoverArgs...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "2 published again") {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	c := e.statuses()
	if c.pending != 0 || c.delivered != 2 {
		t.Fatalf("after recover the outbox holds %s; want both rows %s", c, wbDelivered)
	}
}

// TestUnrecordedSlotIsNotStreamed: a slot the relay did not create (made
// by hand, or by a relay stopped between creating it and adopting its
// backlog) has no checkpoint row; with tables that have pending values,
// streaming it would never send the rows pending before it. run refuses
// it, saying what to do, and sends nothing; `migrate --config` records
// the slot as it is, and run then streams.
func TestUnrecordedSlotIsNotStreamed(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	args := e.writeBackArgs()
	path := args[2]
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "      delivered_at_column: delivered_at\n",
		"      delivered_at_column: delivered_at\n      pending: ["+wbPending+"]\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	migrate := []string{"migrate", "--config", path, "--postgres-url", e.url, "--slot", e.slot}
	if out, err := exec.Command(relayBin, append(migrate, "--no-slot")...).CombinedOutput(); err != nil {
		t.Fatalf("migrate --no-slot: %v\n%s", err, out)
	}
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	mustExec(t, e.conn, "DELETE FROM cdc_relay_checkpoint")
	mustExec(t, e.conn, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", e.slot)
	insert(t, e.conn, "order", "k", "Before", `{"n": 1}`)

	p := e.spawnRelayArgs(relayBin, args...)
	e.waitFor("run refuses the unrecorded slot", 30*time.Second, func() bool {
		return strings.Contains(p.Log(), "exists but the relay never recorded it")
	})
	for _, want := range []string{"pg_drop_replication_slot", "migrate --config"} {
		if !strings.Contains(p.Log(), want) {
			t.Fatalf("the refusal does not say %q:\n%s", want, p.Log())
		}
	}
	if c := e.statuses(); c.pending != 1 || len(e.readAll(e.topic("order"))) != 0 {
		t.Fatalf("the refused slot was streamed: the outbox holds %s", c)
	}
	p.Kill()

	if out, err := exec.Command(relayBin, migrate...).CombinedOutput(); err != nil || !strings.Contains(string(out), "exists") {
		t.Fatalf("migrate --config over the unrecorded slot: %v\n%s", err, out)
	}
	relay := e.startRelayArgs(relayBin, args...)
	defer relay.stop(30 * time.Second)
	e.waitStatuses("the row inserted after the slot is delivered", 30*time.Second, func(c statusCounts) bool { return c.delivered == 1 })
}

// notVisibleMetric counts the rows write-back found not yet visible.
const notVisibleMetric = "cdc_relay_writeback_not_visible_total"

// TestWriteBackWaitsForARowNotYetVisible: under synchronous replication
// with its standby away, an application's commit is in the WAL, so the
// relay reads and delivers its event, but the commit waits for the
// standby and its row is not visible to other sessions. Write-back finds
// no row and counts it; once the standby requirement is lifted (the
// commit returns), the row takes the delivered status. Before, the
// outcome was settled on the spot and the row stayed PENDING for good.
func TestWriteBackWaitsForARowNotYetVisible(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"at-least-once", nil},
		{"exactly-once", exactlyOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parallel(t)
			e, pg := newEnvOwnCluster(t)
			p := e.startRelayArgs(relayBin, append(e.writeBackArgs(), tc.args...)...)
			admin := mustConnect(t, pg.URL("postgres"))
			defer admin.Close(context.Background())
			// Sessions commit locally by default; the application's waits
			// for the standby, and so do the relay's own writes, which ask
			// for synchronous commits (its checkpoint saves wait until the
			// requirement is lifted).
			mustExec(t, e.conn, "CREATE TABLE sync_probe (n int)")
			mustExec(t, admin, "ALTER SYSTEM SET synchronous_commit = 'local'")
			mustExec(t, admin, "ALTER SYSTEM SET synchronous_standby_names = 'away'")
			mustExec(t, admin, "SELECT pg_reload_conf()")
			e.waitSyncRep()
			app := mustConnect(t, e.url)
			defer app.Close(context.Background())
			mustExec(t, app, "SET synchronous_commit = 'on'")
			committed := make(chan error, 1)
			go func() {
				_, err := app.Exec(context.Background(), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
					VALUES ('order', 'k', 'Placed', '{"n": "not visible yet"}')`)
				committed <- err
			}()
			assertValues(t, e.readN(e.topic("order"), 1, 30*time.Second), []string{`{"n": "not visible yet"}`})
			e.waitFor("write-back finds the row not visible yet", 30*time.Second, func() bool {
				_, families := p.scrape()
				return value(families, notVisibleMetric) >= 1
			})
			if c := e.statuses(); c.pending+c.delivered != 0 {
				t.Fatalf("the outbox shows %s while the commit waits for the standby, want no row", c)
			}
			mustExec(t, admin, "ALTER SYSTEM RESET synchronous_standby_names")
			mustExec(t, admin, "SELECT pg_reload_conf()")
			select {
			case err := <-committed:
				if err != nil {
					t.Fatalf("the application's commit: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the application's commit still waits for the standby")
			}
			e.waitStatuses("the row is "+wbDelivered, 30*time.Second, func(c statusCounts) bool { return c.delivered == 1 })
			p.stop(30 * time.Second)
		})
	}
}

// waitSyncRep waits until commits that ask for synchronous replication
// wait for the standby: PostgreSQL applies synchronous_standby_names once
// its checkpointer has read it after a reload, and until then such a
// commit returns at once. A probe commits a row of sync_probe until one
// waits for the standby; that one is left waiting.
func (e *env) waitSyncRep() {
	e.t.Helper()
	probe := mustConnect(e.t, e.url)
	mustExec(e.t, probe, "SET synchronous_commit = 'on'")
	pid := probe.PgConn().PID()
	ctx, cancel := context.WithCancel(context.Background())
	var done chan error
	e.t.Cleanup(func() {
		cancel() // a probe still waiting for the standby stops waiting
		if done != nil {
			<-done
		}
		probe.Close(context.Background())
	})
	e.waitFor("commits wait for the synchronous standby", 30*time.Second, func() bool {
		if done != nil {
			select {
			case err := <-done:
				if err != nil {
					e.t.Fatalf("probe commit: %v", err)
				}
				done = nil // committed without waiting: not in effect yet
			default:
			}
		}
		if done == nil {
			done = make(chan error, 1)
			go func(done chan error) {
				_, err := probe.Exec(ctx, "INSERT INTO sync_probe VALUES (1)")
				done <- err
			}(done)
		}
		var waiting bool
		if err := e.conn.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep')", pid).Scan(&waiting); err != nil {
			e.t.Fatal(err)
		}
		return waiting
	})
}
