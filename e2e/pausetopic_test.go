package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// A topic's pause, kept in the database: the paused topic's events wait in
// the status table (PAUSED) while the rest of the stream goes on; the pause
// outlives the relay; on resume they arrive in commit order.

// pauseCmd runs `cdc-relay pause|resume --topic topic` against the test's
// database and slot and requires exit status 0.
func (e *env) pauseCmd(verb, topic string) {
	e.t.Helper()
	cmd := exec.Command(relayBin, verb, "--topic", topic, "--postgres-url", e.url)
	cmd.Env = append(os.Environ(), "CDC_RELAY_SLOT="+e.slot)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("cdc-relay %s --topic %s: %v\n%s", verb, topic, err, out)
	}
}

// createTopic1 creates topic with one partition, so that offsets show the
// commit order.
func (e *env) createTopic1(topic string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, e.client(), topic, 1, nil); err != nil {
		e.t.Fatal(err)
	}
}

// seqsOf reads the "seq" of each record, in offset order, and the
// distinct ones.
func seqsOf(t *testing.T, recs []*kgo.Record) (inOrder []int, distinct map[int]bool) {
	t.Helper()
	slices.SortFunc(recs, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
	distinct = map[int]bool{}
	for _, r := range recs {
		var v struct{ Seq int }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("record at offset %d: %v", r.Offset, err)
		}
		inOrder = append(inOrder, v.Seq)
		distinct[v.Seq] = true
	}
	return inOrder, distinct
}

// pausedOnStatus reports whether /status lists topic as paused: its
// entry's paused count (or flag), or a list of paused topics naming it.
func (p *relayProc) pausedOnStatus(topic string) bool {
	p.t.Helper()
	code, body := p.call("GET", "/status", "")
	if code != http.StatusOK {
		p.t.Fatalf("GET /status: %d %s", code, body)
	}
	var st struct {
		Topics       []topicLag `json:"topics"`
		PausedTopics []string   `json:"paused_topics"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		p.t.Fatalf("GET /status: %v\n%s", err, body)
	}
	if slices.Contains(st.PausedTopics, topic) {
		return true
	}
	for _, tl := range st.Topics {
		if tl.Topic == topic {
			v := strings.TrimSpace(string(tl.Paused))
			return v == "true" || v != "" && v != "0" && v != "false" && v != "null"
		}
	}
	return false
}

// TestPauseTopicSurvivesRestart: topic A is paused (from the command line
// before the relay starts; through POST /pause?topic=A to the running
// relay, with the token); 100 events on A and 100 on B, interleaved, keys
// shared by both: B's arrive, A has none and the status table 100 PAUSED
// rows. The relay is SIGKILLed and started again: a new event on B
// arrives, A still has none, /status lists A as paused. Resumed, A's 100
// arrive once each, each key's in commit order.
func TestPauseTopicSurvivesRestart(t *testing.T) {
	parallel(t)
	const token = "t0ken-for-the-pause"
	for _, tt := range []struct {
		name           string
		pause, resume  func(e *env, p *relayProc, topic string)
		beforeTheRelay bool // pause before the relay starts
	}{
		{
			name:           "command line",
			pause:          func(e *env, _ *relayProc, topic string) { e.pauseCmd("pause", topic) },
			resume:         func(e *env, _ *relayProc, topic string) { e.pauseCmd("resume", topic) },
			beforeTheRelay: true,
		},
		{
			name: "admin endpoint",
			pause: func(e *env, p *relayProc, topic string) {
				if code, body := p.call("POST", "/pause?topic="+topic, ""); code != http.StatusUnauthorized {
					e.t.Fatalf("POST /pause?topic= without the token: %d %s, want 401", code, body)
				}
				if code, body := p.call("POST", "/pause?topic="+topic, token); code != http.StatusOK {
					e.t.Fatalf("POST /pause?topic=%s: %d %s", topic, code, body)
				}
			},
			resume: func(e *env, p *relayProc, topic string) {
				if code, body := p.call("POST", "/resume?topic="+topic, token); code != http.StatusOK {
					e.t.Fatalf("POST /resume?topic=%s: %d %s", topic, code, body)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			file := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			a, b := e.topic("a"), e.topic("b")
			e.createTopic1(a)
			e.createTopic1(b)
			args := []string{"--admin-token-file", file}
			if tt.beforeTheRelay {
				tt.pause(e, nil, a)
			}
			p := e.startRelay(args...)
			if !tt.beforeTheRelay {
				tt.pause(e, p, a)
			}
			for i := range 100 {
				insert(t, e.conn, "a", fmt.Sprintf("k%d", i%10), "OnA", fmt.Sprintf(`{"seq": %d}`, i))
				insert(t, e.conn, "b", fmt.Sprintf("k%d", i%10), "OnB", fmt.Sprintf(`{"seq": %d}`, i))
			}
			checkPausedHeld(e, a, b, 100)
			checkOrderMetrics(p, map[string]float64{"paused": 100})
			p.Kill()
			p = e.startRelay(args...)
			insert(t, e.conn, "b", "k0", "OnB", `{"seq": 100}`)
			checkPausedHeld(e, a, b, 101)
			e.waitFor("/status lists "+a+" as paused", 30*time.Second, func() bool { return p.pausedOnStatus(a) })
			tt.resume(e, p, a)
			e.readN(a, 100, 60*time.Second)
			e.waitFor("every event of "+a+" DELIVERED", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 100 })
			checkPerKeyOrder(t, a, e.readAll(a), 100)
			p.stop(30 * time.Second)
		})
	}
}

// checkPerKeyOrder requires recs, topic's records, to be events 0…n-1
// once each, every key's in commit order (ascending offsets). Keys are
// delivered side by side, so the full commit order across keys is only
// logged.
func checkPerKeyOrder(t *testing.T, topic string, recs []*kgo.Record, n int) {
	t.Helper()
	inOrder, distinct := seqsOf(t, recs)
	if len(inOrder) != n || len(distinct) != n {
		t.Fatalf("%s holds %d records of %d distinct events, want %d once each: %v", topic, len(inOrder), len(distinct), n, inOrder)
	}
	perKey := map[string][]int{}
	for i, r := range recs { // seqsOf sorted recs by offset
		perKey[string(r.Key)] = append(perKey[string(r.Key)], inOrder[i])
	}
	for key, got := range perKey {
		if !slices.IsSorted(got) {
			t.Errorf("%s: key %s's events arrived as %v (offset order), want commit order", topic, key, got)
		}
	}
	if !slices.IsSorted(inOrder) {
		t.Logf("%s: each key in order; across keys the offsets hold %v", topic, inOrder)
	}
}

// checkPausedHeld waits until b's events 0…onB-1 arrived, then requires a
// empty and its 100 events PAUSED in the status table.
func checkPausedHeld(e *env, a, b string, onB int) {
	e.t.Helper()
	cl := e.client()
	seen := int64(-1)
	e.waitFor(fmt.Sprintf("%d events on %s", onB, b), 60*time.Second, func() bool {
		// After a SIGKILL some arrive twice: count them once, reading
		// again only when the topic grew.
		n := sum(e.endOffsets(cl, b))
		if n == seen || n < int64(onB) {
			return false
		}
		seen = n
		_, distinct := seqsOf(e.t, e.readN(b, int(n), 30*time.Second))
		return len(distinct) == onB
	})
	if n := sum(e.endOffsets(cl, a)); n != 0 {
		e.t.Fatalf("%d events reached the paused topic %s", n, a)
	}
	e.waitFor("100 PAUSED rows", 30*time.Second, func() bool { return e.statusCount("PAUSED") == 100 })
}
