package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecoverFromTheCommitTimeOfTheSavedPosition: a relay that falls
// behind (here, Kafka refuses every produce) keeps saving the position it
// has delivered up to, and each session start saves it again, so the
// checkpoint row's updated_at says nothing of when the transactions after
// that position committed. The slot is then lost: recover must start from
// the commit time of the saved position, less --margin, and publish every
// row committed after it, in either delivery mode. (Before the fix it
// started from updated_at and found none of them.)
func TestRecoverFromTheCommitTimeOfTheSavedPosition(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name     string
		delivery []string
	}{
		{"at least once", nil},
		{"exactly once", exactlyOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			args := tc.delivery
			if args != nil {
				args = append(args, "--checkpoint-topic", e.prefix+".checkpoints")
			}
			recoverFromBehind(t, e, args)
		})
	}
}

// recoverFromBehind delivers a row, then commits rows Kafka refuses, lets
// time pass, restarts the relay, kills it, drops the slot and recovers with
// a margin of 2 s: every row must reach Kafka.
func recoverFromBehind(t *testing.T, e *env, args []string) {
	unblock := func() {}
	defer func() { unblock() }()
	relay := e.startRelay(args...)
	topic := e.topic("order")
	insert(t, e.conn, "order", "k", "Delivered", `{"n": 0}`)
	e.readN(topic, 1, 30*time.Second)

	unblock = e.blockProduce()
	const behind = 5
	for i := 1; i <= behind; i++ {
		insert(t, e.conn, "order", "k", "Behind", fmt.Sprintf(`{"n": %d}`, i))
	}
	// The relay reads them but cannot deliver them: its checkpoint stays
	// before them while time passes, more than recover's margin below.
	e.waitFor("the rows are 3 s old", 30*time.Second, func() bool {
		var old bool
		err := e.conn.QueryRow(context.Background(), "SELECT now() - max(created_at) > interval '3 seconds' FROM outbox").Scan(&old)
		return err == nil && old
	})
	relay.Kill()
	e.waitFor("the slot is released", 30*time.Second, func() bool { return !e.slotActive() })
	// A new session saves its start position again: updated_at is now.
	relay = e.startRelay(args...)
	relay.Kill()
	e.waitFor("the slot is released", 30*time.Second, func() bool { return !e.slotActive() })
	var late bool
	if err := e.conn.QueryRow(context.Background(), "SELECT updated_at > (SELECT max(created_at) FROM outbox) + interval '3 seconds' FROM cdc_relay_checkpoint WHERE slot_name = $1",
		e.slot).Scan(&late); err != nil || !late {
		t.Fatalf("the checkpoint row was not saved again after the rows: %v, %v", late, err)
	}

	// The slot is lost (a failover to a server without it).
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	unblock()
	recoverArgs := append([]string{"recover", "--margin", "2s"}, withoutFlag(e.relayArgs(args...)[1:], "--metrics-addr")...)
	out, err := exec.Command(relayBin, recoverArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	t.Logf("recover said:\n%s", out)
	if !strings.Contains(string(out), "commit time") {
		t.Errorf("recover does not say it started from the commit time of the saved position:\n%s", out)
	}
	// The row delivered, then it and the rows behind it published again.
	assertHasValues(t, e.readN(topic, 1+1+behind, 30*time.Second), behindValues(1, behind))
}

// TestRecoverLocalTimeColumn: an outbox table whose timestamp column has
// no time zone, filled by DEFAULT now() in sessions whose TimeZone is
// America/New_York, holds wall times five hours behind UTC. recover reads
// in UTC: it must widen its window so that it finds every row written
// since the checkpoint, whatever zone wrote it. (Before the fix it found
// none of them, exited 0 and moved the checkpoint on.)
func TestRecoverLocalTimeColumn(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	var db string
	if err := e.conn.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.conn, "ALTER DATABASE "+db+" SET timezone = 'America/New_York'")
	mustExec(t, e.conn, "ALTER TABLE outbox ALTER COLUMN created_at TYPE timestamp without time zone, ALTER COLUMN created_at SET DEFAULT now()")
	e.conn = mustConnect(t, e.url) // in New York's time zone now
	t.Cleanup(func() { e.conn.Close(context.Background()) })

	relay := e.startRelay()
	topic := e.topic("order")
	insert(t, e.conn, "order", "k", "Delivered", `{"n": 0}`)
	e.readN(topic, 1, 30*time.Second)
	relay.stop(30 * time.Second)

	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	const lost = 5
	for i := 1; i <= lost; i++ {
		insert(t, e.conn, "order", "k", "Lost", fmt.Sprintf(`{"n": %d}`, i))
	}
	var behindUTC bool
	if err := e.conn.QueryRow(context.Background(), "SELECT max(created_at) < now() AT TIME ZONE 'UTC' - interval '4 hours' FROM outbox").Scan(&behindUTC); err != nil || !behindUTC {
		t.Fatalf("the rows' wall times are not New York's: %v, %v", behindUTC, err)
	}

	recoverArgs := append([]string{"recover"}, withoutFlag(e.relayArgs()[1:], "--metrics-addr")...)
	out, err := exec.Command(relayBin, recoverArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	t.Logf("recover said:\n%s", out)
	if !strings.Contains(string(out), "has no time zone") {
		t.Errorf("recover does not say it widened its window:\n%s", out)
	}
	assertHasValues(t, e.readAll(topic), behindValues(1, lost))
}

// behindValues are the payloads {"n": from} to {"n": to}.
func behindValues(from, to int) []string {
	var vs []string
	for i := from; i <= to; i++ {
		vs = append(vs, fmt.Sprintf(`{"n": %d}`, i))
	}
	return vs
}

// assertHasValues requires every value of want among recs.
func assertHasValues(t *testing.T, recs []*kgo.Record, want []string) {
	t.Helper()
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	var missing []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d rows missing from Kafka: %s\nrecords:\n%s", len(missing), len(want), strings.Join(missing, " "), strings.Join(got, "\n"))
	}
}
