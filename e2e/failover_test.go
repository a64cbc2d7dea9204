package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// checkOneProducerAtATime requires that no two relays produced at once:
// in each partition, in offset order, a producer id that gave way to
// another never comes back. It returns the producer ids seen.
func checkOneProducerAtATime(t *testing.T, recs []*kgo.Record) map[int64]bool {
	t.Helper()
	type run struct {
		current int64
		retired map[int64]bool
	}
	runs := map[int32]*run{}
	ids := map[int64]bool{}
	for _, r := range recs {
		ids[r.ProducerID] = true
		p := runs[r.Partition]
		if p == nil {
			p = &run{current: r.ProducerID, retired: map[int64]bool{}}
			runs[r.Partition] = p
		}
		if r.ProducerID == p.current {
			continue
		}
		if p.retired[r.ProducerID] {
			t.Fatalf("partition %d, offset %d: producer %d is back after producer %d took over: two relays produced at once",
				r.Partition, r.Offset, r.ProducerID, p.current)
		}
		p.retired[p.current] = true
		p.current = r.ProducerID
	}
	return ids
}

// leaderLockPID is the server process that holds the slot's leadership
// lock, or 0.
func (e *env) leaderLockPID() int {
	e.t.Helper()
	var pid int
	err := e.conn.QueryRow(context.Background(), `SELECT coalesce(max(pid), 0) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('cdc-relay/' || $1, 0)`, e.slot).Scan(&pid)
	if err != nil {
		e.t.Fatal(err)
	}
	return pid
}

// failover is a leader and a standby on the test's slot, with a writer
// committing events at full speed.
type failover struct {
	e               *env
	leader, standby *relayProc
	topic           string
	cl              *kgo.Client
	w               *writer
}

// startFailover starts the two relays and the writer, and waits until the
// standby stands by and events flow.
func (e *env) startFailover() *failover {
	e.t.Helper()
	f := &failover{e: e, leader: e.startRelay(), standby: e.spawnRelay(), topic: e.topic("order"), cl: e.client()}
	e.waitFor("the second relay stands by", 30*time.Second, func() bool { return strings.Contains(f.standby.Log(), "standing by") })
	f.w = e.startWriter(0)
	e.waitFor("events flow", 30*time.Second, func() bool { return e.totalRecords(f.cl, f.topic) >= 5000 })
	return f
}

// finish lets the writer commit 2,000 more events and stops it, waits
// until the slot confirms them, and requires every event in Kafka and no
// two producers at once. It returns the events, those sent twice, and the
// producer ids seen.
func (f *failover) finish() (events, dups, producers int) {
	e := f.e
	e.t.Helper()
	f.w.waitWritten(f.w.count() + 2000)
	perKey := f.w.stop()
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	recs := e.readAll(f.topic)
	dups = checkAtLeastOnce(e.t, recs, perKey)
	return len(recs) - dups, dups, len(checkOneProducerAtATime(e.t, recs))
}

// TestFailoverUnderLoad: two relays on one slot while events are written
// at full speed; the leader is SIGKILLed. The standby produces within 10 s,
// nothing is lost, and at no moment did both produce.
func TestFailoverUnderLoad(t *testing.T) {
	// Alone: it asserts the takeover time (10 s).
	e := newEnv(t)
	f := e.startFailover()
	f.leader.Kill()
	killed := time.Now()
	atKill := e.totalRecords(f.cl, f.topic) // the dead leader produces nothing more
	e.waitFor("the standby produces", 30*time.Second, func() bool { return e.totalRecords(f.cl, f.topic) > atKill })
	takeover := time.Since(killed)
	events, dups, producers := f.finish()
	t.Logf("leader killed after %d records; the standby produced %s later; %d events, %d sent twice, %d producer ids",
		atKill, takeover.Round(time.Millisecond), events, dups, producers)
	if takeover > 10*time.Second {
		t.Errorf("the standby produced %s after the leader died, want within 10s", takeover.Round(time.Millisecond))
	}
	f.standby.stop(30 * time.Second)
}

// TestLeaderStepsDownWhenItsLockSessionEnds: the leader's lock session is
// terminated while the leader runs (a DBA's pg_terminate_backend, a
// connection cut). The leader stops producing and competes for the lock
// again, as the standby does: one of them takes the lock and the slot
// (the standby, usually; the old leader when its reconnect is first, as on
// a loaded machine), the other stands by; nothing is lost, and the two
// never produce at once.
func TestLeaderStepsDownWhenItsLockSessionEnds(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	f := e.startFailover()
	pid := e.leaderLockPID()
	if pid == 0 {
		t.Fatal("no session holds the leadership lock")
	}
	mustExec(t, e.conn, "SELECT pg_terminate_backend($1)", pid)
	ended := time.Now()
	standbyLeads := func() bool { return strings.Contains(f.standby.Log(), "replication started") }
	leaderAgain := func() bool { return strings.Contains(f.leader.Log(), "replication resumed") }
	e.waitFor("a relay streams again", 60*time.Second, func() bool { return standbyLeads() || leaderAgain() })
	t.Logf("a relay streams %s after the leader's lock session ended (the standby: %v)", time.Since(ended).Round(time.Millisecond), standbyLeads())
	if !f.leader.Running() {
		t.Fatalf("the old leader exited: %v", f.leader.Err())
	}
	events, dups, producers := f.finish()
	t.Logf("%d events, %d sent twice, %d producer ids", events, dups, producers)
	if standbyLeads() {
		e.waitFor("the old leader stands by", 30*time.Second, func() bool {
			return strings.Count(f.leader.Log(), "standing by") >= 1
		})
	} else if !f.standby.Running() || strings.Count(f.standby.Log(), "standing by") < 1 {
		t.Fatalf("the old leader leads again, and the standby does not stand by: %v\n%s", f.standby.Err(), f.standby.Log())
	}
	f.leader.stop(30 * time.Second)
	f.standby.stop(30 * time.Second)
}

// TestStandbyKeepsStandingByWhenItsConnectionEnds: the standby's
// connection is terminated while the leader runs. The standby reconnects
// and stands by again: it neither claims leadership nor streams.
func TestStandbyKeepsStandingByWhenItsConnectionEnds(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	leader := e.startRelay()
	standby := e.spawnRelay()
	e.waitFor("the second relay stands by", 30*time.Second, func() bool { return strings.Contains(standby.Log(), "standing by") })
	leaderLock := e.leaderLockPID()
	// Every session of the test's database that is not the leader's lock,
	// its replication connection, or this test's: the standby's, and the
	// leader's pool (which reconnects on its own).
	mustExec(t, e.conn, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> $1 AND backend_type = 'client backend'`, leaderLock)
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	e.readN(e.topic("order"), 1, 30*time.Second)
	e.waitFor("the standby stands by again", 30*time.Second, func() bool { return strings.Count(standby.Log(), "standing by") >= 2 })
	insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
	e.readN(e.topic("order"), 2, 30*time.Second)
	if strings.Contains(standby.Log(), "leadership acquired") || strings.Contains(standby.Log(), "replication started") {
		t.Fatalf("the standby claimed leadership while the leader runs:\n%s", standby.Log())
	}
	if !standby.Running() {
		t.Fatalf("the standby exited: %v", standby.Err())
	}
	leader.stop(30 * time.Second)
	e.waitFor("the standby takes over", 60*time.Second, func() bool { return strings.Contains(standby.Log(), "replication started") })
	standby.stop(30 * time.Second)
}
