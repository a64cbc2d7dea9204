package ratelog

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// causes is how the relay logs undeliverable events by cause.
var causes = Config{Every: time.Minute, Summary: "more events of the same cause", KeyAttr: "cause", CountAttr: "events",
	First: []string{"id"}, Last: []string{"reason"}}

func TestLogger(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// step is a line of key logged, at t0+at, with args; or, with
	// flush, a Flush at t0+at.
	type step struct {
		at    time.Duration
		key   string
		args  []any
		flush bool
		// logged is what Log must report.
		logged bool
	}
	line := func(at time.Duration, key string, logged bool, args ...any) step {
		return step{at: at, key: key, args: args, logged: logged}
	}
	flush := func(at time.Duration) step { return step{at: at, flush: true} }
	// burst is 1,000 events of one cause and 2 of another, then a Flush
	// after the interval and another.
	var burst []step
	for i := range 1000 {
		burst = append(burst, line(0, "topic", i == 0, "cause", "topic", "id", fmt.Sprint("e", i), "reason", fmt.Errorf("illegal topic")))
	}
	burst = append(burst, line(0, "headers", true, "cause", "headers", "id", "h1", "reason", fmt.Errorf("not JSON")),
		line(0, "headers", false, "cause", "headers", "id", "h2", "reason", fmt.Errorf("not JSON")),
		flush(time.Minute), flush(time.Minute))
	tests := []struct {
		name  string
		cfg   Config
		steps []step
		want  []string // the lines logged, without time
	}{
		{name: "the first line at once, the rest counted, the summary at the next line after the interval", cfg: causes,
			steps: []step{
				line(0, "topic", true, "cause", "topic", "id", "e1", "reason", fmt.Errorf("bad topic 1")),
				line(time.Second, "topic", false, "cause", "topic", "id", "e2", "reason", fmt.Errorf("bad topic 2")),
				line(59*time.Second, "topic", false, "cause", "topic", "id", "e3", "reason", fmt.Errorf("bad topic 3")),
				line(time.Minute, "topic", true, "cause", "topic", "id", "e4", "reason", fmt.Errorf("bad topic 4")),
			},
			want: []string{
				`level=WARN msg=line cause=topic id=e1 reason="bad topic 1"`,
				`level=WARN msg="more events of the same cause" cause=topic events=2 since=2026-01-01T00:00:00Z first_id=e2 last_reason="bad topic 3"`,
				`level=WARN msg=line cause=topic id=e4 reason="bad topic 4"`,
			}},
		{name: "Flush reports an interval that has passed, once; the key's next line is then logged at once", cfg: causes,
			steps: []step{
				line(0, "topic", true, "id", "e1"),
				line(time.Second, "topic", false, "id", "e2"),
				flush(59 * time.Second),
				flush(time.Minute),
				flush(2 * time.Minute),
				line(2*time.Minute+time.Second, "topic", true, "id", "e3"),
			},
			want: []string{
				`level=WARN msg=line id=e1`,
				`level=WARN msg="more events of the same cause" cause=topic events=1 since=2026-01-01T00:00:00Z first_id=e2`,
				`level=WARN msg=line id=e3`,
			}},
		{name: "keys are apart; Flush summarizes in the order of the keys; an interval with nothing held back has no summary", cfg: causes,
			steps: []step{
				line(0, "b", true, "id", "b1"),
				line(0, "a", true, "id", "a1"),
				line(0, "c", true, "id", "c1"),
				line(time.Second, "c", false, "id", "c2"),
				line(time.Second, "a", false, "id", "a2"),
				line(2*time.Second, "a", false, "id", "a3"),
				flush(time.Minute),
			},
			want: []string{
				`level=WARN msg=line id=b1`,
				`level=WARN msg=line id=a1`,
				`level=WARN msg=line id=c1`,
				`level=WARN msg="more events of the same cause" cause=a events=2 since=2026-01-01T00:00:00Z first_id=a2`,
				`level=WARN msg="more events of the same cause" cause=c events=1 since=2026-01-01T00:00:00Z first_id=c2`,
			}},
		{name: "a burst of two causes: a line and a summary each", cfg: causes, steps: burst,
			want: []string{
				`level=WARN msg=line cause=topic id=e0 reason="illegal topic"`,
				`level=WARN msg=line cause=headers id=h1 reason="not JSON"`,
				`level=WARN msg="more events of the same cause" cause=headers events=1 since=2026-01-01T00:00:00Z first_id=h2 last_reason="not JSON"`,
				`level=WARN msg="more events of the same cause" cause=topic events=999 since=2026-01-01T00:00:00Z first_id=e1 last_reason="illegal topic"`,
			}},
		{name: "the defaults: no key, lines counted as lines; attributes as slog.Attr, missing ones left out",
			cfg: Config{Every: time.Minute, Summary: "held back", Last: []string{"table", "pending"}},
			steps: []step{
				line(0, "k", true, slog.String("table", "t"), "pending", 1),
				line(time.Second, "k", false, slog.String("table", "t"), slog.Int("pending", 2)),
				line(2*time.Second, "k", false, "pending", 3),
				line(time.Minute+time.Second, "k", true, "pending", 4),
			},
			want: []string{
				`level=WARN msg=line table=t pending=1`,
				`level=WARN msg="held back" lines=2 since=2026-01-01T00:00:00Z last_pending=3`,
				`level=WARN msg=line pending=4`,
			}},
		{name: "Every zero logs every line", cfg: Config{Summary: "held back"},
			steps: []step{line(0, "k", true, "n", 1), line(0, "k", true, "n", 2), flush(0)},
			want:  []string{`level=WARN msg=line n=1`, `level=WARN msg=line n=2`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncbuf.Buffer
			now := t0
			cfg := tc.cfg
			cfg.Now = func() time.Time { return now }
			l := New(newLog(&buf), cfg)
			for i, s := range tc.steps {
				now = t0.Add(s.at)
				if s.flush {
					l.Flush()
					continue
				}
				if got := l.Log(s.key, slog.LevelWarn, "line", s.args...); got != s.logged {
					t.Errorf("step %d: Log = %v, want %v", i, got, s.logged)
				}
			}
			if got := lines(buf.String()); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestSummaryLevel: a summary is at the level of the latest line it
// counts.
func TestSummaryLevel(t *testing.T) {
	var buf syncbuf.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(newLog(&buf), Config{Every: time.Minute, Summary: "held back", Now: func() time.Time { return now }})
	l.Log("k", slog.LevelInfo, "line")
	l.Log("k", slog.LevelWarn, "line")
	l.Log("k", slog.LevelError, "line")
	now = now.Add(time.Minute)
	l.Flush()
	if got := lines(buf.String()); len(got) != 2 || !strings.HasPrefix(got[1], "level=ERROR msg=\"held back\" lines=2") {
		t.Errorf("logged %q", got)
	}
}

// TestHold: Hold counts the lines of a key whose interval holds lines
// back, without their attributes, and leaves the first line of an
// interval to Log.
func TestHold(t *testing.T) {
	var buf syncbuf.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(newLog(&buf), Config{Every: time.Minute, Summary: "held back", KeyAttr: "table", CountAttr: "events",
		Now: func() time.Time { return now }})
	logged := 0
	line := func(id string) {
		if !l.Hold("t", slog.LevelInfo) {
			l.Log("t", slog.LevelInfo, "line", "table", "t", "id", id)
			logged++
		}
	}
	for i := range 5 {
		line(fmt.Sprint("e", i))
	}
	now = now.Add(time.Minute)
	line("e5")
	want := []string{
		`level=INFO msg=line table=t id=e0`,
		`level=INFO msg="held back" table=t events=4 since=2026-01-01T00:00:00Z`,
		`level=INFO msg=line table=t id=e5`,
	}
	if got := lines(buf.String()); logged != 2 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d lines built; logged:\n%s\nwant:\n%s", logged, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// newLog is a text logger to buf without times.
func newLog(buf *syncbuf.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}}))
}

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
