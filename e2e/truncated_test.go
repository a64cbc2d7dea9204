package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStatusTableTruncatedIsWarned: a TRUNCATE of the status table while
// it holds a paused topic's events drops them from the poller's hands.
// The relay must say so, once, with how many and the recover command;
// that command, run as printed, then a start and the resume, deliver every
// event. (Before, nothing was logged and the events never arrived.)
func TestStatusTableTruncatedIsWarned(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")
	insert(t, e.conn, "order", "k", "Before", `{"n": "before"}`)
	e.readN(topic, 1, 30*time.Second)
	e.pauseCmd("pause", topic)
	e.waitFor("the relay sees the pause", 30*time.Second, func() bool { return relay.pausedOnStatus(topic) })
	const paused = 3
	for i := range paused {
		insert(t, e.conn, "order", "k", "Paused", fmt.Sprintf(`{"n": "paused %d"}`, i))
	}
	e.waitFor("the relay counts the paused events", 60*time.Second, func() bool {
		for _, h := range relay.status().Topics {
			if h.Topic == topic && h.Paused == paused {
				return true
			}
		}
		return false
	})
	mustExec(t, e.conn, "TRUNCATE outbox_delivery")
	const said = "the status table was emptied (TRUNCATE)"
	e.waitFor("the relay warns of the lost events", 60*time.Second, func() bool { return strings.Contains(relay.Log(), said) })
	log := relay.Log()
	if n := strings.Count(log, said); n != 1 || !strings.Contains(log, fmt.Sprintf("lost_at_least=%d", paused)) {
		t.Fatalf("the warning is said %d times, or without lost_at_least=%d:\n%s", n, paused, log)
	}
	relay.stop(30 * time.Second)
	m := regexp.MustCompile("`cdc-relay recover --since (\\S+)`").FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the warning has no recover command:\n%s", log)
	}
	e.recoverPrinted(log)
	e.pauseCmd("resume", topic)
	relay = e.startRelay()
	e.waitEveryID(topic, 1+paused)
	relay.stop(30 * time.Second)
}
