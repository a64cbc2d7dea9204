package backfill

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Progress is how far a backfill has gone.
type Progress struct {
	// Table is the table, schema.table.
	Table string
	// Rows are the rows published: Kafka acknowledged each of their
	// records.
	Rows int64
	// Skipped are the rows that could not become records (the relay would
	// park them DEAD), logged with their key.
	Skipped int64
	// Total is the number of rows the predicate selected at the start:
	// the rows the backfill reads (fewer if some are deleted meanwhile).
	Total int64
	// Started and Now are when the backfill started and when this was
	// taken.
	Started, Now time.Time
	// LastKey is the key of the last row done (FormatKey's text), where a
	// later run resumes with --after; empty before the first batch.
	LastKey string
}

// done is the rows published or skipped.
func (p Progress) done() int64 { return p.Rows + p.Skipped }

// Rate is the rows done per second since the start.
func (p Progress) Rate() float64 {
	s := p.Now.Sub(p.Started).Seconds()
	if s <= 0 {
		return 0
	}
	return float64(p.done()) / s
}

// Left is the time left at the rate so far; false while it cannot be told.
func (p Progress) Left() (time.Duration, bool) {
	r := p.Rate()
	if r <= 0 || p.Total <= 0 {
		return 0, false
	}
	if p.done() > p.Total {
		return 0, false
	}
	left := p.Total - p.done()
	return time.Duration(float64(left) / r * float64(time.Second)).Round(time.Second), true
}

// Printer shows a backfill's progress to a person: on a terminal, one
// line redrawn in place at most every BarEvery; elsewhere (a log file, a
// pipe), a line every LineEvery. It is safe for concurrent use: log lines
// written through [Printer.Writer] clear the bar first.
type Printer struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	every    time.Duration
	last     time.Time // of the last line or bar drawn
	drawn    bool      // a bar is on the terminal's line
	latest   *Progress // the last told, which Tick shows again
}

// How often a Printer draws the bar, and writes a line when not on a
// terminal.
const (
	BarEvery  = 200 * time.Millisecond
	LineEvery = 5 * time.Second
)

// barWidth is the bar's width in characters.
const barWidth = 24

// NewPrinter returns a printer to w, drawing a bar if terminal.
func NewPrinter(w io.Writer, terminal bool) *Printer {
	every := LineEvery
	if terminal {
		every = BarEvery
	}
	return &Printer{w: w, terminal: terminal, every: every}
}

// Update shows p if the last line or bar is older than the printer's
// interval (the first at once).
func (pr *Printer) Update(p Progress) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.latest = &p
	if !pr.last.IsZero() && p.Now.Sub(pr.last) < pr.every {
		return
	}
	pr.last = p.Now
	if pr.terminal {
		fmt.Fprintf(pr.w, "\r%s\x1b[K", bar(p))
		pr.drawn = true
		return
	}
	fmt.Fprintln(pr.w, line(p))
}

// Tick shows the last progress told again as of now, if the printer's
// interval has passed: a backfill whose batch waits (Kafka away, the
// server slow) still prints its line every LineEvery, its rate falling.
// Nothing before the first Update.
func (pr *Printer) Tick(now time.Time) {
	pr.mu.Lock()
	latest := pr.latest
	pr.mu.Unlock()
	if latest != nil {
		p := *latest
		p.Now = now
		pr.Update(p)
	}
}

// Start calls Tick every tickEvery until the returned stop is called,
// which waits for the last Tick to end.
func (pr *Printer) Start() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(tickEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				pr.Tick(now)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// tickEvery is how often Start ticks: within the shortest interval.
const tickEvery = BarEvery

// Clear removes the bar, if one is drawn, so that what follows starts a
// clean line.
func (pr *Printer) Clear() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.clear()
}

// clear is Clear, with mu held.
func (pr *Printer) clear() {
	if pr.drawn {
		fmt.Fprint(pr.w, "\r\x1b[K")
		pr.drawn = false
	}
}

// Writer returns a writer to the printer's output that clears the bar
// before each write (the next Update draws it again): for a log.
func (pr *Printer) Writer() io.Writer { return clearingWriter{pr} }

// clearingWriter is Printer.Writer.
type clearingWriter struct{ pr *Printer }

func (c clearingWriter) Write(b []byte) (int, error) {
	c.pr.mu.Lock()
	defer c.pr.mu.Unlock()
	if c.pr.drawn {
		c.pr.clear()
		c.pr.last = time.Time{} // draw the bar again at the next Update
	}
	return c.pr.w.Write(b)
}

// bar is the terminal's progress line: the table, the bar, rows done of
// the total, the rate and the time left.
func bar(p Progress) string {
	filled := 0
	if p.Total > 0 {
		filled = int(min(p.done(), p.Total) * barWidth / p.Total)
	}
	return fmt.Sprintf("%s [%s%s] %s", p.Table, strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), counts(p))
}

// line is a progress line for a log: the same as the bar, in words, with
// the last key.
func line(p Progress) string {
	s := "backfill " + p.Table + ": " + counts(p)
	if p.LastKey != "" {
		s += ", last key " + p.LastKey
	}
	return s
}

// counts is "1,000/4,000 rows (25%), 500 rows/s, 6s left"; past the
// count taken at the start (rows committed since match too), "4,100 rows
// (4,000 counted at the start), 500 rows/s".
func counts(p Progress) string {
	var s string
	switch {
	case p.done() > p.Total:
		s = Thousands(p.done()) + " rows (" + Thousands(p.Total) + " counted at the start)"
	case p.Total > 0:
		s = fmt.Sprintf("%s/%s rows (%d%%)", Thousands(p.done()), Thousands(p.Total), p.done()*100/p.Total)
	default:
		s = Thousands(p.done()) + "/0 rows"
	}
	s += ", " + Thousands(int64(p.Rate()+0.5)) + " rows/s"
	if left, ok := p.Left(); ok {
		s += ", " + left.String() + " left"
	}
	if p.Skipped > 0 {
		s += ", " + Thousands(p.Skipped) + " skipped"
	}
	return s
}

// Summary is the line that ends a backfill: the rows published of those
// selected at the start, the time, the rate and the last key.
func Summary(p Progress) string {
	took := p.Now.Sub(p.Started).Round(time.Millisecond)
	s := fmt.Sprintf("backfill of %s: %s rows published of %s selected in %s (%s rows/s)", p.Table, Thousands(p.Rows), Thousands(p.Total), took, Thousands(int64(p.Rate()+0.5)))
	if p.Skipped > 0 {
		s += fmt.Sprintf(", %s skipped (they cannot become records: see the log)", Thousands(p.Skipped))
	}
	if p.LastKey != "" {
		s += ", last key " + p.LastKey
	}
	return s
}

// DryRunSummary is what a dry run found: the rows the predicate selects,
// and the first and last key.
func DryRunSummary(r Result) string {
	s := fmt.Sprintf("dry run: %s row(s) of %s selected", Thousands(r.Total), r.Table)
	if r.First != "" {
		s += fmt.Sprintf(", key (%s) from %s to %s", strings.Join(r.Key.Columns, ", "), r.First, r.Last)
	}
	return s
}

// Thousands writes n with a comma between each group of three digits:
// 1,000,000.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
