package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSlotGapRefusedThenRecovered: with the relay stopped, its slot is
// dropped (and, in one case, created again under the same name) and an
// event is committed meanwhile. `run` refuses to start and names the gap
// and `cdc-relay recover`; recover publishes the missing event; `run` then
// resumes from the slot.
func TestSlotGapRefusedThenRecovered(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name     string
		recreate bool
		refusal  string
	}{
		{name: "re-created", recreate: true, refusal: "ahead of the relay's checkpoint"},
		{name: "dropped", refusal: "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			relay := e.startRelay()
			topic := e.topic("order")
			insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
			e.readN(topic, 1, 30*time.Second)
			relay.stop(30 * time.Second)

			mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
			insert(t, e.conn, "order", "k", "Lost", `{"n": "lost"}`)
			if tc.recreate {
				mustExec(t, e.conn, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", e.slot)
			} else {
				// migrate (a deploy runs it first) must not create the
				// slot again: that would hide the gap.
				out, err := exec.Command(relayBin, "migrate", "--postgres-url", e.url, "--slot", e.slot).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "did not create replication slot") {
					t.Fatalf("migrate after the slot was dropped: %v\n%s", err, out)
				}
				if e.slotExists() {
					t.Fatalf("migrate created the dropped slot again:\n%s", out)
				}
			}

			out, err := exec.Command(relayBin, e.relayArgs()...).CombinedOutput()
			if err == nil {
				t.Fatalf("the relay started over a gap in the WAL without a word:\n%s", out)
			}
			for _, want := range []string{tc.refusal, "cdc-relay recover", "--accept-slot-loss", " ago "} {
				if !strings.Contains(string(out), want) {
					t.Fatalf("the refusal does not mention %q:\n%s", want, out)
				}
			}

			recoverArgs := append([]string{"recover"}, withoutFlag(e.relayArgs()[1:], "--metrics-addr")...) // run's alone
			out, err = exec.Command(relayBin, append(recoverArgs, "--dry-run")...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "2 outbox row(s)") {
				t.Fatalf("recover --dry-run: %v\n%s", err, out)
			}
			if n := len(e.readAll(topic)); n != 1 {
				t.Fatalf("the dry run published: %d records", n)
			}
			out, err = exec.Command(relayBin, recoverArgs...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "2 published again") {
				t.Fatalf("recover: %v\n%s", err, out)
			}
			t.Logf("recover said:\n%s", out)
			recs := e.readN(topic, 3, 30*time.Second)
			assertValues(t, recs, []string{`{"n": 1}`, `{"n": 1}`, `{"n": "lost"}`})

			// Nothing left to recover, and run resumes from the slot.
			out, err = exec.Command(relayBin, recoverArgs...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "nothing to recover") {
				t.Fatalf("a second recover: %v\n%s", err, out)
			}
			relay = e.startRelay()
			insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
			recs = e.readN(topic, 4, 30*time.Second)
			assertValues(t, recs, []string{`{"n": 1}`, `{"n": 1}`, `{"n": "lost"}`, `{"n": 2}`})
			relay.stop(30 * time.Second)
		})
	}
}

// TestFastPostgresRestartsResendLittle: PostgreSQL 15 does not always
// persist a logical slot's confirmed position at a fast shutdown, so a
// relay that resumed from the slot sent again much of what it had
// delivered (before the fix, all 150,000 events of a backlog, twice). It
// resumes from the later of the slot and its checkpoint row, saved every
// 250 ms while it moves, and stops streaming as soon as the shutdown is
// seen: two restarts together resend at most a second of events. Both
// restarts hit the relay while it drains a backlog at full speed.
func TestFastPostgresRestartsResendLittle(t *testing.T) {
	// Alone: it restarts the package's cluster, and bounds the resent events by the measured draining rate.
	e := newEnv(t)
	e.relaySideOnly() // PostgreSQL's side and the relay's: on kfake, on 15, whose shutdown it is about
	// Large enough that both restarts meet the relay while it drains, on
	// Apache Kafka too, where it drains about 60,000 events a second.
	const txs, perTx = 600, 1000
	// migrate created the slot: the backlog waits in it.
	perKey := e.writeBacklog(txs, perTx)
	e.createTopic(e.topic("order"), nil) // no wait for auto-creation
	relay := e.startRelay()
	topic := e.topic("order")
	cl := e.client()
	var rates []float64
	for i := 0; i < 2; i++ {
		from := e.totalRecords(cl, topic)
		t0 := time.Now()
		e.waitFor("events flow", 60*time.Second, func() bool { return e.totalRecords(cl, topic) >= from+10000 })
		if e.totalRecords(cl, topic) >= txs*perTx {
			t.Fatalf("the relay drained the whole backlog before restart %d: make it larger", i+1)
		}
		rates = append(rates, float64(e.totalRecords(cl, topic)-from)/time.Since(t0).Seconds())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := cluster.Restart(ctx, "fast")
		cancel()
		if err != nil {
			t.Fatalf("restart PostgreSQL: %v", err)
		}
		t.Logf("PostgreSQL restarted (fast) after %d records, draining at %.0f events/s", e.totalRecords(cl, topic), rates[i])
		e.conn = mustConnect(t, e.url)
		t.Cleanup(func() { e.conn.Close(context.Background()) })
		e.waitFor("the relay streams again", 90*time.Second, func() bool {
			if !relay.Running() {
				t.Fatalf("the relay exited: %v", relay.Err())
			}
			return e.slotActive()
		})
	}
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 120*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	dups := checkAtLeastOnce(t, e.readAll(topic), perKey)
	rate := max(rates[0], rates[1])
	t.Logf("%d events, two fast restarts while draining: %d sent twice (%.2f s of draining)", txs*perTx, dups, float64(dups)/rate)
	// Each restart resends what was acked but not saved: what was acked
	// since the last save, and until the next one failed.
	if limit := int(rate); dups > limit {
		t.Errorf("%d events sent twice over two restarts, more than %d (a second of draining)", dups, limit)
	}
	relay.stop(30 * time.Second)
}

// writeBacklog commits txs transactions of perTx events each, round-robin
// over ten keys, with the per-key sequences checkAtLeastOnce reads.
func (e *env) writeBacklog(txs, perTx int) map[string]int {
	e.t.Helper()
	for x := 0; x < txs; x++ {
		mustExec(e.t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT 'order', 'key-' || (g % 10), 'OrderChanged', json_build_object('key', 'key-' || (g % 10), 'seq', g / 10)
			FROM generate_series($1::int, $2::int - 1) g ORDER BY g`, x*perTx, (x+1)*perTx)
	}
	perKey := map[string]int{}
	for k := 0; k < 10; k++ {
		perKey[fmt.Sprintf("key-%d", k)] = txs * perTx / 10
	}
	return perKey
}
