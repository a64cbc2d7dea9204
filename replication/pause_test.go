package replication

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestPauseSwitch: waiters wake on Resume, from any goroutine, and a
// wait ends with its context.
func TestPauseSwitch(t *testing.T) {
	var p PauseSwitch
	if err := p.WaitResumed(context.Background()); err != nil || p.Paused() {
		t.Fatalf("a new switch is paused: %v", err)
	}
	if !p.Pause() || p.Pause() || !p.Paused() {
		t.Fatal("Pause does not report the change once")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.WaitResumed(ctx); err == nil {
		t.Fatal("WaitResumed returned while paused")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- p.WaitResumed(context.Background())
		}()
	}
	if !p.Resume() || p.Resume() || p.Paused() {
		t.Fatal("Resume does not report the change once")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
