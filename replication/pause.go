package replication

import (
	"context"
	"sync"
	"sync/atomic"
)

// PauseSwitch is a Pauser switched by hand: the relay's pause of reading
// the slot (and of the poller's deliveries, which wait on WaitResumed).
// The zero value is running. It is safe for concurrent use.
type PauseSwitch struct {
	flag    atomic.Bool // paused, read without the lock: the stream asks per message
	mu      sync.Mutex
	paused  bool
	resumed chan struct{} // closed on Resume; nil while running
}

// Pause pauses; it reports whether this call changed anything.
func (p *PauseSwitch) Pause() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		return false
	}
	p.paused, p.resumed = true, make(chan struct{})
	p.flag.Store(true)
	return true
}

// Resume resumes; it reports whether this call changed anything.
func (p *PauseSwitch) Resume() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		return false
	}
	close(p.resumed)
	p.paused, p.resumed = false, nil
	p.flag.Store(false)
	return true
}

// Paused reports whether reading is paused.
func (p *PauseSwitch) Paused() bool { return p.flag.Load() }

// WaitResumed blocks while paused, until ctx ends.
func (p *PauseSwitch) WaitResumed(ctx context.Context) error {
	p.mu.Lock()
	resumed := p.resumed
	p.mu.Unlock()
	if resumed == nil {
		return nil
	}
	select {
	case <-resumed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
