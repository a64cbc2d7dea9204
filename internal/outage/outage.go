package outage

import (
	"sync"
	"sync/atomic"
	"time"
)

// Config says when failures are an outage and what is done about it.
type Config struct {
	// Grace is how long failures must last, with no success between
	// them, before they are an outage.
	Grace time.Duration
	// Lost is called once when an outage begins, with the failure that
	// found the grace passed; Back once when it ends, with the outage.
	// They are called in order, one at a time, and must not call the
	// Tracker. Nil calls nothing.
	Lost func(Outage)
	Back func(Outage)
	// Defer, if set, is asked before Lost, with the outage Lost would be
	// given: true puts Lost off to the next failure (another line already
	// says so, such as one for the whole cluster). An outage whose Lost
	// was put off until its end ends with no Back either. It is called
	// under the Tracker's lock and must not call the Tracker.
	Defer func(Outage) bool
	// Forget, if positive, is how long a run of failures is remembered
	// with no attempt at all after its latest failure: a failure later
	// than that starts a run of its own, unless Lost was called. A server
	// tried rarely (a seed broker's address) then does not count a blip
	// of hours ago as the start of an outage. Zero forgets nothing.
	Forget time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Outage describes a run of failures: since the first of them, the
// latest failure's place and error, and how long the failures have lasted
// (so far, at Lost; in all, at Back).
type Outage struct {
	Since    time.Time
	Where    string // what the latest failure was about (a broker, a host); may be empty
	Err      error  // the latest failure's error
	Failures int    // failed attempts so far
	Lasted   time.Duration
}

// Tracker follows one server's (or one set of servers') reachability.
// Create it with [New].
type Tracker struct {
	cfg     Config
	failing atomic.Bool // a failure since the last success

	mu     sync.Mutex
	cur    Outage    // the current run of failures; zero Since when none
	latest time.Time // cur's latest failure
	down   bool      // Lost was called for cur
}

// New returns a Tracker that reports as cfg says.
func New(cfg Config) *Tracker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Tracker{cfg: cfg}
}

// Failed records a failed attempt at where (a host:port, or "") with err,
// and calls Lost if it makes the failures an outage.
func (t *Tracker) Failed(where string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	if t.cur.Since.IsZero() || t.forgotten(now) {
		t.cur = Outage{Since: now}
		t.failing.Store(true)
	}
	t.cur.Where, t.cur.Err = where, err
	t.cur.Failures++
	t.cur.Lasted = now.Sub(t.cur.Since)
	t.latest = now
	if t.down || now.Sub(t.cur.Since) < t.cfg.Grace {
		return
	}
	if t.cfg.Defer != nil && t.cfg.Defer(t.cur) {
		return
	}
	t.down = true
	if t.cfg.Lost != nil {
		t.cfg.Lost(t.cur)
	}
}

// forgotten reports whether the current run of failures, not an outage
// yet, is older than Config.Forget at now.
func (t *Tracker) forgotten(now time.Time) bool {
	return t.cfg.Forget > 0 && !t.down && now.Sub(t.latest) > t.cfg.Forget
}

// Succeeded records a successful attempt: it ends the failures, and calls
// Back if they were an outage. While nothing fails it is one atomic load.
func (t *Tracker) Succeeded() {
	if !t.failing.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur.Since.IsZero() {
		return // another success ended them first
	}
	o := t.cur
	o.Lasted = t.cfg.Now().Sub(o.Since)
	wasDown := t.down
	t.cur, t.down = Outage{}, false
	t.failing.Store(false)
	if wasDown && t.cfg.Back != nil {
		t.cfg.Back(o)
	}
}

// Down reports whether an outage is under way: Lost was called and Back
// not yet.
func (t *Tracker) Down() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.down
}

// Failing reports whether an attempt failed since the last success (an
// outage, or failures still within the grace).
func (t *Tracker) Failing() bool { return t.failing.Load() }
