package poller

import (
	"context"
	"time"

	"github.com/cdc-relay/cdc-relay/status"
)

// overlapper is a Store whose claims may overlap (*status.Store): the
// next one begun while the last one's outcomes are written.
type overlapper interface {
	BeginClaim(ctx context.Context, limit int, exclude []int64) (*status.Claimed, error)
}

// finishing is a claim whose outcomes a goroutine of its own is writing
// and committing (status.Claimed.Finish).
type finishing struct {
	done chan error    // the commit's outcome, once
	took time.Duration // from the claim's start to its commit, set before done
	n    int           // rows claimed
	keys []status.Key  // delivered, for Config.Delivered
	ends []func()      // what Config.Claimed returned for it
	// delivered are the ids of its rows when Kafka acknowledged every
	// one: only then may the next claim begin before it commits, leaving
	// them out. Nil otherwise.
	delivered []int64
}

// runOverlapped is Run over a store whose claims may overlap. While a
// claim's outcomes are written and committed (a transaction of their
// own), the next claim is begun and its rows loaded: two backends work at
// once, the second core's worth of a switch-over's backlog. The rows are
// produced only once the last claim committed and ended (Config.Delivered
// heard of its keys, and what Config.Claimed returned was called), so
// that the relay hears of one claim at a time, in order, and a claim whose
// last one did not commit is aborted without producing anything. Only a
// claim whose every row Kafka acknowledged is overlapped: otherwise its
// outcomes are committed before the next claim begins, which then sees
// the rows left held. Before it returns, the last claim's outcomes are
// committed.
func (p *Poller) runOverlapped(ctx context.Context, store overlapper) {
	ended, cancel := context.WithCancel(context.Background())
	cancel() // asks Config.Hold whether it would block
	var last *finishing
	defer func() {
		if err := p.endClaim(last); err != nil {
			p.sayFailed(ctx, err)
		}
	}()
	for {
		if p.cfg.Hold != nil && last != nil && p.cfg.Hold(ended) != nil {
			// The relay is paused: the last claim ends now, not at the
			// resume (its keys' events wait in memory until it has).
			if err := p.endClaim(last); err != nil {
				p.sayFailed(ctx, err)
			}
			last = nil
		}
		if p.cfg.Hold != nil && p.cfg.Hold(ctx) != nil {
			return
		}
		next, n, err := p.claimOverlapped(ctx, store, last)
		last = next
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.sayFailed(ctx, err)
		}
		if err != nil || !p.full(n) {
			// Nothing to overlap: the claim ends before the wait.
			if err := p.endClaim(last); err != nil {
				p.sayFailed(ctx, err)
			}
			last = nil
			if !p.sleep(ctx, err) {
				return
			}
		}
	}
}

// claimOverlapped begins a claim beside last (nil: none), the claim still
// finishing, loads its rows, ends last, then produces the rows and starts
// writing their outcomes; it returns the claim finishing, and how many
// rows it claimed. Last is ended whatever happens, and every look tells
// Config.Claimed, as RunOnce does.
func (p *Poller) claimOverlapped(ctx context.Context, store overlapper, last *finishing) (*finishing, int, error) {
	began := time.Now()
	if last != nil && last.delivered == nil {
		if err := p.endClaim(last); err != nil {
			return nil, 0, p.lookFailed(began, err)
		}
		last = nil
	}
	var exclude []int64
	if last != nil {
		exclude = last.delivered
	}
	p.held, p.told = 0, false
	c, err := store.BeginClaim(ctx, p.cfg.Batch, exclude)
	if err != nil {
		if lerr := p.endClaim(last); lerr != nil {
			p.sayFailed(ctx, lerr)
		}
		return nil, 0, p.lookFailed(began, err)
	}
	loaded, errs := p.loadClaimed(ctx, c.Rows)
	if err := p.endClaim(last); err != nil {
		// Its rows stay as they were, held before this claim's: none of
		// this claim's may go first.
		c.Abort(ctx)
		return nil, 0, p.lookFailed(began, err)
	}
	if ctx.Err() != nil {
		c.Abort(ctx) // a stop: nothing more is produced
		return nil, 0, p.lookFailed(began, ctx.Err())
	}
	var out []status.Outcome
	var keys []status.Key
	if len(c.Rows) > 0 {
		out, keys = p.deliverLoaded(ctx, c.Rows, loaded, errs)
	}
	if !p.told && p.cfg.Claimed != nil {
		p.claimed(nil) // a look that claimed nothing is a claim of no key
	}
	f := &finishing{done: make(chan error, 1), n: len(c.Rows), keys: keys, ends: p.claimEnds,
		delivered: everyDelivered(c.Rows, out)}
	p.claimEnds = nil
	slimDelivered(out)
	withoutRecords(c.Rows)
	go func() {
		err := c.Finish(ctx, out)
		f.took = time.Since(began)
		f.done <- err
	}()
	return f, len(c.Rows), nil
}

// lookFailed ends a look that failed before its rows were produced, as
// RunOnce ends one: counted, and Config.Claimed told of no key (which
// ends the drains a claim carried over and this one cannot take over);
// it returns err.
func (p *Poller) lookFailed(began time.Time, err error) error {
	if p.cfg.Claimed != nil {
		p.told = false
		p.claimed(nil)
	}
	_ = p.endClaim(&finishing{done: committed(), took: time.Since(began), ends: p.claimEnds})
	p.claimEnds = nil
	return err
}

// committed is the done of a claim with nothing to commit.
func committed() chan error {
	c := make(chan error, 1)
	c <- nil
	return c
}

// endClaim waits until f's outcomes are committed (nil f: nothing to do)
// and ends the claim as RunOnce does: the cycle counted, Config.Delivered
// told of its keys once they are committed, what Config.Claimed returned
// called. It returns the commit's error.
func (p *Poller) endClaim(f *finishing) error {
	if f == nil {
		return nil
	}
	err := <-f.done
	if m := p.cfg.Metrics; m != nil {
		m.PollerCycles.Inc()
		m.PollerCycleDuration.Observe(f.took.Seconds())
		m.PollerRowsClaimed.Add(float64(f.n))
	}
	if err == nil && len(f.keys) > 0 && p.cfg.Delivered != nil {
		p.cfg.Delivered(f.keys)
	}
	for _, ended := range f.ends {
		ended()
	}
	return err
}

// everyDelivered returns the ids of rows when out says each was
// delivered, else nil.
func everyDelivered(rows []status.Row, out []status.Outcome) []int64 {
	if len(rows) == 0 || len(out) != len(rows) {
		return nil
	}
	ids := make([]int64, len(out))
	for i, o := range out {
		if !o.Delivered || o.Paused {
			return nil
		}
		ids[i] = o.ID
	}
	return ids
}

// slimDelivered leaves each delivered outcome's loaded record its topic
// alone, all Finish writes of it (withoutRecords drops the claimed rows'
// own), so that a claim finishing holds no record beside the next
// claim's.
func slimDelivered(out []status.Outcome) {
	for i, o := range out {
		if o.Delivered && !o.Paused && o.Loaded != nil {
			out[i].Loaded = &status.Row{ID: o.Loaded.ID, Topic: o.Loaded.Topic}
		}
	}
}

// withoutRecords drops the records of claimed rows that Finish does not
// read (their key, value and headers), so that a claim finishing beside
// the next one holds none of them.
func withoutRecords(rows []status.Row) {
	for i := range rows {
		rows[i].Key, rows[i].Value, rows[i].Headers = nil, nil, nil
	}
}
