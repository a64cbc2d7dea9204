package relay

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestNotReady: ready is a leader that streams, or a standby, with
// PostgreSQL and Kafka answering and no session error pending.
func TestNotReady(t *testing.T) {
	for _, tt := range []struct {
		name    string
		st      Status
		checked bool
		ready   bool
	}{
		{"streaming leader", Status{Role: RoleLeader, Streaming: true}, true, true},
		{"paused leader", Status{Role: RoleLeader, Streaming: true, Paused: true}, true, true},
		{"standby", Status{Role: RoleStandby}, true, true},
		{"not checked yet", Status{Role: RoleLeader, Streaming: true}, false, false},
		{"leader not streaming yet", Status{Role: RoleLeader}, true, false},
		{"starting", Status{Role: RoleStarting}, true, false},
		{"stopped", Status{Role: RoleStopped}, true, false},
		{"Kafka away", Status{Role: RoleLeader, Streaming: true, KafkaError: "dial refused"}, true, false},
		{"PostgreSQL away", Status{Role: RoleStandby, PostgresError: "timeout"}, true, false},
		{"between sessions", Status{Role: RoleStarting, LastError: "receive: EOF"}, true, false},
	} {
		why := notReady(tt.st, tt.checked)
		if (why == "") != tt.ready {
			t.Errorf("%s: notReady = %q, want ready %v", tt.name, why, tt.ready)
		}
	}
}

// TestPauseSwitch: waiters wake on Resume, from any goroutine, and a
// wait ends with its context.
func TestPauseSwitch(t *testing.T) {
	var p pauseSwitch
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
