package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRecoverEpochSecondsColumn: the outbox table's timestamp column is a
// bigint of epoch seconds, and the slot is dropped while rows are
// written. recover told the column is in milliseconds selects no row
// while the gap holds five: it exits with an error naming the unit to set,
// and changes nothing. recover with no unit judges seconds by the
// column's newest value and publishes every row of the gap, with record
// timestamps of now, not of 1970. (Before, it compared the column as
// milliseconds, selected none of them and exited 0.)
func TestRecoverEpochSecondsColumn(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	mustExec(t, e.conn, `ALTER TABLE outbox ALTER COLUMN created_at DROP DEFAULT,
		ALTER COLUMN created_at TYPE bigint USING extract(epoch FROM created_at)::bigint,
		ALTER COLUMN created_at SET DEFAULT extract(epoch FROM now())::bigint`)

	relay := e.startRelay()
	topic := e.topic("order")
	insert(t, e.conn, "order", "k", "Delivered", `{"n": 0}`)
	if rec := e.readN(topic, 1, 30*time.Second)[0]; time.Since(rec.Timestamp).Abs() > time.Hour {
		t.Errorf("the streamed record's timestamp is %v, want about now: the column read in another unit", rec.Timestamp)
	}
	relay.stop(30 * time.Second)

	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	const lost = 5
	for i := 1; i <= lost; i++ {
		insert(t, e.conn, "order", "k", "Lost", fmt.Sprintf(`{"n": %d}`, i))
	}

	recoverArgs := append([]string{"recover"}, withoutFlag(e.relayArgs()[1:], "--metrics-addr")...)
	out, err := exec.Command(relayBin, append(recoverArgs, "--timestamp-unit", "ms")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "selects no row, but 5 row(s) were written after the relay last saved its checkpoint") ||
		!strings.Contains(string(out), "timestamp_unit") {
		t.Fatalf("recover with the wrong unit: %v, want an error naming the unit to set:\n%s", err, out)
	}
	if e.slotExists() {
		t.Fatal("the refused recover created the slot")
	}

	out, err = exec.Command(relayBin, recoverArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	t.Logf("recover said:\n%s", out)
	if !strings.Contains(string(out), "unit=s") {
		t.Errorf("recover does not say it judged the column's unit:\n%s", out)
	}
	recs := e.readAll(topic)
	assertHasValues(t, recs, behindValues(1, lost))
	for _, r := range recs {
		if time.Since(r.Timestamp).Abs() > time.Hour {
			t.Errorf("record %s has timestamp %v, want about now", r.Value, r.Timestamp)
		}
	}
	var n int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox").Scan(&n); err != nil || n != lost+1 {
		t.Errorf("%d outbox rows left (%v), want %d: retention read the column in another unit", n, err, lost+1)
	}
}
