package backfill

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPrinter: on a terminal, a bar redrawn in place at most every
// BarEvery; elsewhere, one line every LineEvery; a log line through Writer
// clears the bar first.
func TestPrinter(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration, rows int64, key string) Progress {
		return Progress{Table: "public.outbox", Rows: rows, Total: 4000, Started: start, Now: start.Add(d), LastKey: key}
	}
	updates := []Progress{
		at(time.Second, 500, "500"),
		at(time.Second+100*time.Millisecond, 550, "550"),
		at(2*time.Second, 1000, "1000"),
		at(4*time.Second, 2000, "2000"),
		at(6500*time.Millisecond, 3000, "3000"),
	}
	for _, tc := range []struct {
		name     string
		terminal bool
		want     string
	}{
		{"terminal", true, "\rpublic.outbox [###.....................] 500/4,000 rows (12%), 500 rows/s, 7s left\x1b[K" +
			"\rpublic.outbox [######..................] 1,000/4,000 rows (25%), 500 rows/s, 6s left\x1b[K" +
			"\rpublic.outbox [############............] 2,000/4,000 rows (50%), 500 rows/s, 4s left\x1b[K" +
			"\r\x1b[Ka log line\n" +
			"\rpublic.outbox [##################......] 3,000/4,000 rows (75%), 462 rows/s, 2s left\x1b[K"},
		{"not a terminal", false, "backfill public.outbox: 500/4,000 rows (12%), 500 rows/s, 7s left, last key 500\n" +
			"a log line\n" +
			"backfill public.outbox: 3,000/4,000 rows (75%), 462 rows/s, 2s left, last key 3000\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			pr := NewPrinter(&out, tc.terminal)
			for i, p := range updates {
				if i == 4 {
					_, _ = pr.Writer().Write([]byte("a log line\n"))
				}
				pr.Update(p)
			}
			if out.String() != tc.want {
				t.Errorf("printed\n%q\nwant\n%q", out.String(), tc.want)
			}
			pr.Clear()
			if tc.terminal && !strings.HasSuffix(out.String(), "\r\x1b[K") {
				t.Errorf("Clear left the bar: %q", out.String())
			}
		})
	}
}

// TestPrinterTicks: while no batch ends (a produce waiting for Kafka),
// Tick prints the last progress again every LineEvery, its rate falling;
// nothing before the first Update.
func TestPrinterTicks(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	pr := NewPrinter(&out, false)
	pr.Tick(start.Add(time.Second))
	pr.Update(Progress{Table: "t", Rows: 1000, Total: 4000, Started: start, Now: start.Add(time.Second), LastKey: "1000"})
	for s := 2; s <= 11; s++ {
		pr.Tick(start.Add(time.Duration(s) * time.Second))
	}
	want := "backfill t: 1,000/4,000 rows (25%), 1,000 rows/s, 3s left, last key 1000\n" +
		"backfill t: 1,000/4,000 rows (25%), 167 rows/s, 18s left, last key 1000\n" +
		"backfill t: 1,000/4,000 rows (25%), 91 rows/s, 33s left, last key 1000\n"
	if out.String() != want {
		t.Errorf("printed\n%q\nwant\n%q", out.String(), want)
	}
}

// TestSummary: the lines that end a backfill and a dry run.
func TestSummary(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	p := Progress{Table: "public.outbox", Rows: 1234567, Skipped: 2, Total: 1234569, Started: start, Now: start.Add(10 * time.Second), LastKey: "999"}
	if got, want := Summary(p), "backfill of public.outbox: 1,234,567 rows published of 1,234,569 selected in 10s (123,457 rows/s), 2 skipped (they cannot become records: see the log), last key 999"; got != want {
		t.Errorf("Summary = %q\nwant      %q", got, want)
	}
	r := Result{Progress: Progress{Table: "app.events", Total: 6000}, Key: Key{Columns: []string{"stream", "position"}}, First: `["a","4001"]`, Last: `["b","10000"]`}
	if got, want := DryRunSummary(r), `dry run: 6,000 row(s) of app.events selected, key (stream, position) from ["a","4001"] to ["b","10000"]`; got != want {
		t.Errorf("DryRunSummary = %q\nwant             %q", got, want)
	}
	over := Progress{Table: "t", Rows: 4100, Total: 4000, Started: start, Now: start.Add(2 * time.Second)}
	if got, want := line(over), "backfill t: 4,100 rows (4,000 counted at the start), 2,050 rows/s"; got != want {
		t.Errorf("past the count: %q\nwant %q", got, want)
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234: "-1,234", 1000000: "1,000,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
