package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// outageLines are the lines of log at info level or above (the relay's
// default) whose message mentions about (Kafka, PostgreSQL), the WARN and
// ERROR lines, and the client's own lines ("kafka: …") at any level but
// debug.
func outageLines(log, about string) (mention, warn, client []string) {
	for _, ln := range strings.Split(log, "\n") {
		level := regexp.MustCompile(`level=(\w+)`).FindStringSubmatch(ln)
		if level == nil || level[1] == "DEBUG" {
			continue
		}
		msg := regexp.MustCompile(`msg=("[^"]*"|\S+)`).FindStringSubmatch(ln)
		if msg == nil {
			continue
		}
		if strings.Contains(msg[1], about) {
			mention = append(mention, ln)
		}
		if level[1] == "WARN" || level[1] == "ERROR" {
			warn = append(warn, ln)
		}
		if strings.HasPrefix(strings.Trim(msg[1], `"`), "kafka: ") {
			client = append(client, ln)
		}
	}
	return mention, warn, client
}

// checkOutageLines requires, in window, exactly one warning that the
// server (about: Kafka, PostgreSQL) cannot be reached, naming check among
// what to check, then exactly one info line that it is back after at
// least least; no warning while it is away (no line per reconnect
// attempt), and none of the Kafka client's own lines at info or above.
// only, if set, requires that no other line at info or above mentions
// about, and no other warning.
func checkOutageLines(t *testing.T, window, about, check string, least time.Duration, only bool) {
	t.Helper()
	mention, warn, client := outageLines(window, about)
	if len(client) > 0 {
		t.Errorf("%d lines of the Kafka client's own at info or above, want none (debug only):\n%s", len(client), strings.Join(client, "\n"))
	}
	lostAt, backAt := -1, -1
	for i, ln := range mention {
		switch {
		case strings.Contains(ln, `msg="`+about+` cannot be reached`):
			if lostAt >= 0 {
				t.Errorf("a second line that %s cannot be reached: %s", about, ln)
			}
			lostAt = i
		case strings.Contains(ln, `msg="`+about+` is reachable again`):
			if backAt >= 0 {
				t.Errorf("a second line that %s is back: %s", about, ln)
			}
			backAt = i
		}
	}
	if lostAt < 0 || backAt < lostAt {
		t.Fatalf("want a line that %s cannot be reached, then one that it is back; the lines about it:\n%s", about, strings.Join(mention, "\n"))
	}
	lost, back := mention[lostAt], mention[backAt]
	t.Logf("the outage's lines:\n%s\n%s", lost, back)
	if !strings.Contains(lost, "level=WARN") || !strings.Contains(lost, check) {
		t.Errorf("lost: %s\nwant a warning naming %s", lost, check)
	}
	m := regexp.MustCompile(`level=INFO msg="` + about + ` is reachable again after (\S+)"`).FindStringSubmatch(back)
	if m == nil {
		t.Fatalf("back: %s\nwant an info line that %s is reachable again after a duration", back, about)
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d < least {
		t.Errorf("back after %s, want at least %s", m[1], least)
	}
	var away []string // warnings from lost to back, lost excluded
	inside := false
	for _, ln := range strings.Split(window, "\n") {
		switch {
		case ln == lost:
			inside = true
		case ln == back:
			inside = false
		case inside && (strings.Contains(ln, "level=WARN") || strings.Contains(ln, "level=ERROR")):
			away = append(away, ln)
		}
	}
	if len(away) > 0 {
		t.Errorf("%d warnings while %s was away, want none:\n%s", len(away), about, strings.Join(away, "\n"))
	}
	if only && (len(mention) != 2 || len(warn) != 1) {
		t.Errorf("%d lines about %s and %d warnings, want 2 (lost, back) and 1 (lost):\n%s", len(mention), about, len(warn), window)
	}
}

// outageLength is how long the outage tests keep a server away: twice
// the relay's grace before it says so (sink.OutageGrace, the PostgreSQL
// one: 5 s), so that the warning comes while the server is away even when
// PostgreSQL's failed pings (every 2 s) begin late on a busy machine.
// outageAfter is the window after the server's return in which the tests
// count lines: past the resumed session's start-up lines, which come once
// the relay streams again (the tests wait for it first).
const (
	outageLength = 10 * time.Second
	outageAfter  = 5 * time.Second
)

// TestBrokerOutage stops the broker for outageLength (10 s) while events
// are written, and starts it again on the same port with its data:
// nothing lost, nothing duplicated (the idempotent producer holds across
// the outage), delivery resumes (how soon is logged: a busy machine sets
// it, not the relay), and the log says it in two lines. From the stop
// until 5 s after the broker is back, the relay says once that Kafka
// cannot be reached and once that it is back after at least 8 s (the
// outage, not the time since its warning), no line of the broker's own
// (the cluster's lines cover it) and none of the client's retry warnings.
func TestBrokerOutage(t *testing.T) {
	parallelOwnBroker(t) // it stops the broker
	if testing.Short() {
		t.Skip("10 s broker outage")
	}
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")
	cl := e.client()
	w := e.startWriter(10 * time.Millisecond)
	e.waitFor("events flow", 30*time.Second, func() bool { return e.totalRecords(cl, topic) >= 500 })
	from := len(relay.Log())
	e.stopBroker()
	time.Sleep(outageLength) // the outage itself, not a synchronisation
	e.startBroker()
	back := time.Now()
	cl = e.client()
	atRestart := e.totalRecords(cl, topic)
	e.waitFor("delivery resumes", 2*time.Minute, func() bool { return e.totalRecords(cl, topic) > atRestart })
	resumed := time.Since(back)
	e.waitFor("the relay says Kafka is back", 30*time.Second, func() bool {
		return strings.Contains(relay.Log()[from:], "Kafka is reachable again")
	})
	time.Sleep(time.Until(back.Add(outageAfter))) // the window the lines are counted in
	window := relay.Log()[from:]
	perKey := w.stop()
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 2*time.Minute, func() bool { return e.lsn(slotLSN) >= end })
	total := 0
	for _, n := range perKey {
		total += n
	}
	checkExactlyOnce(t, e.readAll(topic), total, perKey)
	t.Logf("%d events; delivery resumed %s after the broker started (%d records were in the topic then)", total, resumed.Round(time.Millisecond), atRestart)
	checkOutageLines(t, window, "Kafka", "--kafka-brokers", outageLength-2*time.Second, true)
	for _, ln := range strings.Split(window, "\n") {
		if strings.Contains(ln, `msg="Kafka broker `) {
			t.Errorf("a line of one broker's in an outage of the whole (one-broker) cluster: %s", ln)
		}
	}
	if !relay.Running() {
		t.Fatalf("the relay exited during the outage: %v", relay.Err())
	}
	relay.stop(30 * time.Second)
}

// loudLines are the lines of log at info level or above.
func loudLines(log string) []string {
	var loud []string
	for _, ln := range strings.Split(log, "\n") {
		if level := regexp.MustCompile(`level=(\w+)`).FindStringSubmatch(ln); level != nil && level[1] != "DEBUG" {
			loud = append(loud, ln)
		}
	}
	return loud
}

// TestPostgresOutageLogsTwoLines stops PostgreSQL (a fast shutdown) for
// outageLength (10 s): from the stop until 5 s after it is back and the
// relay streams again, the relay logs two lines at info or above, that
// PostgreSQL cannot be reached and that it is back after at least 7 s
// (the outage less a ping's interval and a margin, not the time since
// its warning); not what the session's end could not save when the
// server went away, not a line per reconnect, not the start-up lines of
// the session that resumes. It resumes with every event once. PostgreSQL
// is a cluster of the test's own.
func TestPostgresOutageLogsTwoLines(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("10 s PostgreSQL outage")
	}
	e, pg := newEnvOwnCluster(t)
	relay := e.startRelay()
	topic := e.topic("order")
	perKey := e.writeEvents(1, 100, 10, 10)
	cl := e.client()
	e.waitFor("the events arrive", 30*time.Second, func() bool { return e.totalRecords(cl, topic) >= 1000 })
	// Confirmed before the stop: the final checkpoint of a fast shutdown
	// cannot be saved (the server takes no new sessions), so what was not
	// confirmed before it would be sent again.
	confirmed := e.lsn(insertLSN)
	e.waitFor("the slot confirms the first events", 60*time.Second, func() bool { return e.lsn(slotLSN) >= confirmed })
	from := len(relay.Log())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.conn.Close(ctx)
	if err := pg.Halt(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(outageLength) // the outage itself, not a synchronisation
	if err := pg.StartAgain(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	e.conn = mustConnect(t, e.url)
	t.Cleanup(func() { e.conn.Close(context.Background()) })
	more := e.writeEventsFrom(perKey, 100, 10)
	e.waitFor("the relay says PostgreSQL is back", 30*time.Second, func() bool {
		return strings.Contains(relay.Log()[from:], "PostgreSQL is reachable again")
	})
	e.waitFor("the relay streams again", 60*time.Second, e.slotActive)
	streams := time.Now()
	time.Sleep(time.Until(streams.Add(outageAfter))) // the window the lines are counted in
	window := relay.Log()[from:]
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	if dups := checkAtLeastOnce(t, e.readAll(topic), more); dups > 0 {
		t.Errorf("%d events sent twice, want every event once", dups)
	}
	t.Logf("the relay streamed again %s after PostgreSQL started", streams.Sub(back).Round(time.Millisecond))
	checkOutageLines(t, window, "PostgreSQL", "--postgres-url", outageLength-3*time.Second, true)
	if loud := loudLines(window); len(loud) != 2 {
		t.Errorf("%d lines at info or above from the stop until 5 s after it streams again, want 2 (lost, back):\n%s", len(loud), strings.Join(loud, "\n"))
	}
	relay.stop(30 * time.Second)
}
