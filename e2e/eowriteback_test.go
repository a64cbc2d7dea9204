package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Exactly-once delivery with write-back (issue 41, item 3): a Kafka
// transaction commits before write-back writes its rows, so a relay killed
// in between leaves the checkpoint topic ahead of the slot. The next start
// reads the transactions between them again without producing them, and
// writes their rows.

// blockDelivered holds every write of the DELIVERED status to the outbox
// (a row trigger waits for an advisory lock the test holds) until unblock,
// which first ends every other session of the test's database but the
// test's own (those of a killed relay would write once the lock is free;
// a load reconnects), then drops the trigger. The FAILED status of a parked
// event is written at once.
func (e *env) blockDelivered() (unblock func()) {
	e.t.Helper()
	ctx := context.Background()
	holder := mustConnect(e.t, e.url)
	mustExec(e.t, holder, "SELECT pg_advisory_lock(4141)")
	mustExec(e.t, e.conn, `CREATE FUNCTION block_delivered() RETURNS trigger LANGUAGE plpgsql
		AS $$BEGIN PERFORM pg_advisory_xact_lock_shared(4141); RETURN NEW; END$$`)
	mustExec(e.t, e.conn, `CREATE TRIGGER block_delivered BEFORE UPDATE ON outbox FOR EACH ROW
		WHEN (NEW.status = '`+wbDelivered+`') EXECUTE FUNCTION block_delivered()`)
	unblocked := false
	unblock = func() {
		e.t.Helper()
		if unblocked {
			return
		}
		unblocked = true
		rows, _ := e.conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'
			AND pid NOT IN (pg_backend_pid(), $1)`, holder.PgConn().PID())
		ended, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			e.t.Fatalf("list the sessions that may wait for write-back's lock: %v", err)
		}
		for _, pid := range ended {
			mustExec(e.t, e.conn, "SELECT pg_terminate_backend($1)", pid)
		}
		e.waitFor("the ended sessions are gone", 30*time.Second, func() bool {
			var n int
			if err := e.conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", ended).Scan(&n); err != nil {
				e.t.Fatal(err)
			}
			return n == 0
		})
		mustExec(e.t, e.conn, "DROP TRIGGER block_delivered ON outbox")
		holder.Close(ctx)
	}
	e.t.Cleanup(func() { holder.Close(ctx) })
	return unblock
}

// checkpointTopicAt is the position of the test's slot in the newest
// committed record of the checkpoint topic, if there is one.
func (e *env) checkpointTopicAt() (pglogrepl.LSN, bool) {
	e.t.Helper()
	var last []byte
	if !e.readCommittedUntil(checkpointTopic, 30*time.Second, func() bool { return true }, func(r *kgo.Record) {
		if string(r.Key) == e.slot {
			last = r.Value
		}
	}) {
		e.t.Fatalf("could not read %s to its end within 30s", checkpointTopic)
	}
	if last == nil {
		return 0, false
	}
	var cp struct {
		LSN string `json:"lsn"`
	}
	if err := json.Unmarshal(last, &cp); err != nil {
		e.t.Fatalf("checkpoint record %s: %v", last, err)
	}
	lsn, err := pglogrepl.ParseLSN(cp.LSN)
	if err != nil {
		e.t.Fatalf("checkpoint record %s: %v", last, err)
	}
	return lsn, true
}

// TestExactlyOnceWriteBackSurvivesKill: exactly-once delivery with
// write-back, an application's load running; no row can be written
// DELIVERED (blockDelivered) while Kafka commits the events and the
// checkpoint topic moves past them, one event too large for Kafka is parked
// among them (its row written FAILED); the relay is killed with SIGKILL,
// write-back unblocked and the relay started again, the load still
// running. Within 90 s of the restart no row is PENDING, the parked one is
// FAILED (not overwritten DELIVERED), and a read_committed consumer reads
// every other event once.
func TestExactlyOnceWriteBackSurvivesKill(t *testing.T) {
	parallel(t)
	const (
		beforeKill = 2_000
		deadline   = 90 * time.Second // for every row to be written back after the restart
	)
	e := newEnv(t)
	args := append(e.writeBackArgs(), exactlyOnce...)
	unblock := e.blockDelivered()
	topic := e.topic("order")
	e.createTopic(topic, nil)
	p := e.startRelayArgs(relayBin, args...)
	l := e.startLoad(0, 1000)
	l.waitWritten(beforeKill/2, time.Minute)
	var bigID string
	if err := e.conn.QueryRow(context.Background(), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('order', 'big', 'Big', json_build_object('pad', repeat('x', 2000000))::jsonb) RETURNING id::text`).Scan(&bigID); err != nil {
		t.Fatal(err)
	}
	bigAt := e.lsn(insertLSN)
	l.waitWritten(beforeKill, time.Minute)
	e.waitFor("Kafka commits past the parked event, no row written back", 90*time.Second, func() bool {
		at, ok := e.checkpointTopicAt()
		return ok && at > bigAt && len(e.failedList()) == 1
	})
	p.Kill()
	topicAt, _ := e.checkpointTopicAt()
	slotAt := e.lsn(slotLSN)
	unblock()
	atKill := e.statuses()
	t.Logf("killed with the checkpoint topic at %s, the slot at %s; the outbox then held %s", topicAt, slotAt, atKill)
	if topicAt <= slotAt || atKill.delivered != 0 || atKill.pending < beforeKill {
		t.Fatalf("the kill must come with the topic (%s) ahead of the slot (%s) and every delivered row pending: %s", topicAt, slotAt, atKill)
	}

	restarted := time.Now()
	p = e.startRelayArgs(relayBin, args...)
	l.waitWritten(l.count()+beforeKill/2, time.Minute) // the load goes on beside the restart
	l.stop()
	lastAt := e.markLast()
	c := e.waitStatuses("no row is left "+wbPending, deadline-time.Since(restarted), func(c statusCounts) bool { return c.pending == 0 })
	t.Logf("%s after the restart: the outbox holds %s", time.Since(restarted).Round(time.Millisecond), c)
	var bigStatus string
	if err := e.conn.QueryRow(context.Background(), "SELECT status FROM outbox WHERE id = $1::uuid", bigID).Scan(&bigStatus); err != nil {
		t.Fatal(err)
	}
	if bigStatus != wbFailed || c.other != 1 || c.undated != 0 {
		t.Errorf("the parked event's row is %s and the outbox holds %s; want it %s, every other row %s with delivered_at",
			bigStatus, c, wbFailed, wbDelivered)
	}
	e.waitConfirmed(time.Minute)
	good := e.outboxIDs("event_type <> 'Big'")
	requireEachOnce(t, topic, e.countCommitted(topic, len(good), time.Minute), good)
	e.requireCheckpointPast(lastAt)
	p.stop(30 * time.Second)
}
