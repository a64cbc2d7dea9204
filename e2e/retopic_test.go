package e2e

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFailedRetryToCorrectedTopic: two events of one key whose rows name
// an illegal topic are parked DEAD; `cdc-relay failed retry ID --topic T`
// delivers the first to T once, and its status row says DELIVERED, with T
// as its topic and the illegal one kept as its original topic, which
// `failed show` prints; the second, corrected in turn, follows it.
func TestFailedRetryToCorrectedTopic(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.startRelay()
	const bad = "bad topic!*"
	for _, n := range []string{"first", "second"} {
		mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload) VALUES ('order', 'k', 'BadTopic', $1, $2)`,
			bad, `{"n": "`+n+`"}`)
	}
	e.waitFor("both rows are parked DEAD", 30*time.Second, func() bool { return e.statusCount("DEAD") == 2 })
	var ids []int64
	rows, err := e.conn.Query(context.Background(), "SELECT id FROM outbox_delivery ORDER BY id")
	if err == nil {
		for rows.Next() {
			var id int64
			err = rows.Scan(&id)
			ids = append(ids, id)
		}
		rows.Close()
	}
	if err != nil || len(ids) != 2 {
		t.Fatalf("status rows %v: %v", ids, err)
	}
	fixed := e.topic("fixed")
	retry := func(id int64) {
		t.Helper()
		s := strconv.FormatInt(id, 10)
		out, err := exec.Command(relayBin, "failed", "retry", s, "--topic", fixed, "--postgres-url", e.url).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "retried 1 event: "+s+`, to topic "`+fixed+`"`) {
			t.Fatalf("failed retry %s --topic %s: %v\n%s", s, fixed, err, out)
		}
	}
	retry(ids[0])
	assertValues(t, e.readN(fixed, 1, 30*time.Second), []string{`{"n": "first"}`})
	var state, topic, original string
	e.waitFor("the corrected event is DELIVERED", 30*time.Second, func() bool {
		err := e.conn.QueryRow(context.Background(), "SELECT status, topic, coalesce(original_topic, '') FROM outbox_delivery WHERE id = $1", ids[0]).
			Scan(&state, &topic, &original)
		return err == nil && state == "DELIVERED"
	})
	if topic != fixed || original != bad {
		t.Fatalf("the delivered row's topic is %q, original %q; want %q, %q", topic, original, fixed, bad)
	}
	if n := e.statusCount("DEAD"); n != 1 {
		t.Fatalf("%d DEAD rows after the first's correction, want the second's", n)
	}
	show, err := exec.Command(relayBin, "failed", "show", strconv.FormatInt(ids[0], 10), "--postgres-url", e.url).CombinedOutput()
	if err != nil || !strings.Contains(string(show), "original topic:  "+bad) || !strings.Contains(string(show), "status:          DELIVERED") {
		t.Fatalf("failed show %d: %v\n%s", ids[0], err, show)
	}
	retry(ids[1])
	e.waitFor("both corrected events are DELIVERED", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 2 })
	recs := e.readAll(fixed)
	checkOnce(t, recs, 2)
	assertValues(t, recs, []string{`{"n": "first"}`, `{"n": "second"}`})
}
