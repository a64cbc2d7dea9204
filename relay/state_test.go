package relay

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/report"
)

// TestStatusHeldAndBehind: the status table's reading gives Status its
// topics with held events, and events_behind is the events in flight plus
// the held ones the relay delivers itself (not DEAD); unknown (-1) before
// the first reading. The metrics' snapshot serves the same topics.
func TestStatusHeldAndBehind(t *testing.T) {
	r := &Relay{cfg: DefaultConfig()}
	if st := r.Status(); st.EventsBehind != -1 || st.Topics != nil {
		t.Fatalf("before a reading: behind %d, topics %v; want -1 and none", st.EventsBehind, st.Topics)
	}
	tr := checkpoint.NewTracker(0, checkpoint.Limits{})
	tx := tr.Begin(time.Now())
	tr.Add(tx, 10)
	tr.Add(tx, 10)
	r.state.tracker.Store(tr)
	topics := []report.TopicHeld{
		{Topic: "orders", Failed: 2, Dead: 1, Waiting: 3, Paused: 1, OldestHeldSeconds: 30},
		{Topic: "payments", Paused: 2, OldestHeldSeconds: 120},
	}
	r.state.setDatabase(report.DatabaseStats{At: time.Now(), Failed: 2, Dead: 1, Waiting: 3, Paused: 3, Topics: topics, HeldTopics: 2})
	st := r.Status()
	if st.EventsBehind != 2+2+3+3 {
		t.Errorf("events behind %d, want 10: 2 in flight, 2 FAILED, 3 WAITING, 3 PAUSED (DEAD not counted)", st.EventsBehind)
	}
	if !reflect.DeepEqual(st.Topics, topics) || st.HeldTopics != 2 {
		t.Errorf("topics %+v (%d), want %+v (2)", st.Topics, st.HeldTopics, topics)
	}
	snap := r.snapshot()
	want := []metrics.HeldTopic{
		{Topic: "orders", Failed: 2, Dead: 1, Waiting: 3, Paused: 1, OldestSeconds: 30},
		{Topic: "payments", Paused: 2, OldestSeconds: 120},
	}
	if snap.EventsBehind != 10 || !reflect.DeepEqual(snap.Held, want) {
		t.Errorf("snapshot: behind %d, held %+v; want 10, %+v", snap.EventsBehind, snap.Held, want)
	}
}

// TestStatusSaysTheBuild: Status, and so GET /status's JSON, says the
// relay's version and commit from Config.Build.
func TestStatusSaysTheBuild(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Build = buildinfo.Info{Version: "v0.5.0", Commit: "2b7a81f3da8a2fd289da1f12ae7bad2ad6f24b76", GoVersion: "go1.26.8"}
	st := (&Relay{cfg: cfg}).Status()
	if st.Version != "v0.5.0" || st.Commit != cfg.Build.Commit {
		t.Errorf("version %q, commit %q; want v0.5.0, %s", st.Version, st.Commit, cfg.Build.Commit)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version":"v0.5.0"`, `"commit":"2b7a81f3da8a2fd289da1f12ae7bad2ad6f24b76"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s: no %s", b, want)
		}
	}
}
