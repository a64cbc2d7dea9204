package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The topic of a parked event corrected as it is retried (`failed retry
// ID --topic T`, POST /failed/{id}/retry?topic=T): the later events of its
// key in T wait behind it.

// retopicToken is the admin token of these tests.
const retopicToken = "t0ken-for-the-retopic-tests"

// retopicEnv is a relay with an admin token, and the DEAD row of event
// "first" of key k, parked for an illegal topic.
type retopicEnv struct {
	*env
	relay *relayProc
	fixed string // the topic the event is corrected to
	id    int64  // its status row
}

// newRetopicEnv starts a relay with extra flags and the admin token; the
// topic fixed exists unless missing.
func newRetopicEnv(t *testing.T, missing bool, extra ...string) *retopicEnv {
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(retopicToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &retopicEnv{env: e, fixed: e.topic("fixed")}
	if !missing {
		e.createTopic(r.fixed, nil)
	}
	r.relay = e.startRelay(append([]string{"--admin-token-file", file}, extra...)...)
	r.insert("bad topic!*", "first")
	e.waitFor("the first event parked DEAD", 30*time.Second, func() bool { return e.statusCount("DEAD") == 1 })
	if err := e.conn.QueryRow(context.Background(), "SELECT id FROM outbox_delivery WHERE status = 'DEAD'").Scan(&r.id); err != nil {
		t.Fatal(err)
	}
	return r
}

// insert commits an event of key k for topic, with value {"n": "<n>"}.
func (r *retopicEnv) insert(topic, n string) {
	mustExec(r.t, r.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload) VALUES ('order', 'k', 'E', $1, $2)`,
		topic, `{"n": "`+n+`"}`)
}

// retryAdmin corrects the row's topic to fixed through the admin endpoint.
func (r *retopicEnv) retryAdmin() {
	path := "/failed/" + strconv.FormatInt(r.id, 10) + "/retry?topic=" + r.fixed
	if code, body := r.relay.call("POST", path, retopicToken); code != http.StatusOK {
		r.t.Fatalf("POST %s: %d %s", path, code, body)
	}
}

// retryCLI corrects the row's topic to fixed with `cdc-relay failed retry`.
func (r *retopicEnv) retryCLI() {
	out, err := exec.Command(relayBin, "failed", "retry", strconv.FormatInt(r.id, 10), "--topic", r.fixed, "--postgres-url", r.url).CombinedOutput()
	if err != nil {
		r.t.Fatalf("failed retry --topic: %v\n%s", err, out)
	}
}

// checkFirstThenSecond requires fixed to hold the events first, then
// second, of key k, once each.
func (r *retopicEnv) checkFirstThenSecond() {
	var got []string
	for _, rec := range r.readN(r.fixed, 2, 60*time.Second) {
		got = append(got, string(rec.Value))
	}
	if want := []string{`{"n": "first"}`, `{"n": "second"}`}; strings.Join(got, " ") != strings.Join(want, " ") {
		r.t.Fatalf("%s holds %v, want %v: a later event of the key overtook the corrected one\n%s", r.fixed, got, want, r.relay.Log())
	}
}

// TestRetopicAdminKeepsOrder: the admin endpoint holds the key in its new
// topic before the correction commits: an event of the key committed as
// soon as it returns waits behind the corrected event.
func TestRetopicAdminKeepsOrder(t *testing.T) {
	parallel(t)
	r := newRetopicEnv(t, false)
	r.retryAdmin()
	r.insert(r.fixed, "second")
	r.checkFirstThenSecond()
}

// TestRetopicCommandLineKeepsOrder: a correction by another process is
// learnt by the relay within its status interval; an event of the key
// committed after that waits behind the corrected event.
func TestRetopicCommandLineKeepsOrder(t *testing.T) {
	parallel(t)
	r := newRetopicEnv(t, false)
	r.retryCLI()
	r.waitFor("the relay holds the corrected key, or delivered the event", 30*time.Second, func() bool {
		return strings.Contains(r.relay.Log(), "events whose topic was corrected hold the later events of their keys") ||
			r.statusCount("DELIVERED") == 1
	})
	t.Logf("the relay held the key before the second event: %v", strings.Contains(r.relay.Log(), "hold the later events of their keys"))
	r.insert(r.fixed, "second")
	r.checkFirstThenSecond()
}

// TestRetopicFailingAgainHolds: a corrected event that fails again in its
// new topic (missing, topics not created) holds the later events of its
// key there WAITING; once the topic exists, both are delivered in order.
func TestRetopicFailingAgainHolds(t *testing.T) {
	parallel(t)
	r := newRetopicEnv(t, true, "--kafka-create-topics=false", "--retry-base", "200ms", "--retry-max", "1s", "--max-attempts", "1000")
	r.retryAdmin()
	r.waitFor("the corrected event failed again in its new topic", 60*time.Second, func() bool {
		var attempts int
		err := r.conn.QueryRow(context.Background(), "SELECT attempts FROM outbox_delivery WHERE id = $1", r.id).Scan(&attempts)
		return err == nil && attempts > 0
	})
	r.insert(r.fixed, "second")
	r.waitFor("the later event parked WAITING", 30*time.Second, func() bool { return r.statusCount("WAITING") == 1 })
	if n := len(r.endOffsets(r.client(), r.fixed)); n != 0 {
		t.Fatalf("%s exists (%d partitions): topic creation was not off", r.fixed, n)
	}
	r.createTopic(r.fixed, nil)
	r.checkFirstThenSecond()
}
