package leader

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestStandbyWatchFollowsTheSlot: a standby reports a problem only once
// the slot has had no walsender for longer than inactiveAfter, once, and
// clears it when the slot is streamed again.
func TestStandbyWatchFollowsTheSlot(t *testing.T) {
	var problems []string
	w := &StandbyWatch{slot: "s", log: slog.New(slog.DiscardHandler), inactiveAfter: 10 * time.Second,
		problem: func(p string) { problems = append(problems, p) }}
	t0 := time.Now()
	w.follow(false, "server process 7 (app-worker)", t0)
	w.follow(false, "server process 7 (app-worker)", t0.Add(10*time.Second))
	if len(problems) != 0 {
		t.Fatalf("problems %q within inactiveAfter; want none", problems)
	}
	w.follow(false, "server process 7 (app-worker)", t0.Add(11*time.Second))
	w.follow(false, "server process 7 (app-worker)", t0.Add(12*time.Second))
	if len(problems) != 1 || !strings.Contains(problems[0], "server process 7 (app-worker)") || !strings.Contains(problems[0], "no walsender") {
		t.Fatalf("problems %q; want one naming the holder and the missing walsender", problems)
	}
	w.follow(true, "", t0.Add(13*time.Second))
	if len(problems) != 2 || problems[1] != "" {
		t.Fatalf("problems %q; want the problem cleared once the slot is streamed", problems)
	}
	w.follow(false, "x", t0.Add(14*time.Second))
	if len(problems) != 2 {
		t.Fatalf("problems %q: a new inactivity counts from its own start", problems)
	}
}
