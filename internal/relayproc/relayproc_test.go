package relayproc

import (
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{"plain", "4242 (cdc-relay) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 8 0", 3250 * time.Millisecond, false},
		{"spaces and parentheses in the name", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0", 30 * time.Millisecond, false},
		{"truncated", "7 (x) R 1 7", 0, true},
		{"no name", "garbage", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU(tc.stat)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("parseStatCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseVmHWM(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         int64
		wantErr      bool
	}{
		{"present", "Name:\tcdc-relay\nVmPeak:\t  900 kB\nVmHWM:\t   70312 kB\nVmRSS:\t 1 kB\n", 70312 << 10, false},
		{"missing", "Name:\tcdc-relay\n", 0, true},
		{"malformed", "VmHWM:\tlots\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVmHWM(tc.status)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("parseVmHWM = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestStartStopKill(t *testing.T) {
	// Exits 0 on SIGTERM, like the relay.
	p, err := Start("sh", "-c", `trap 'echo stopping; exit 0' TERM; echo started; while :; do sleep 0.05; done`)
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(p.Log(), "started") {
		select {
		case <-p.Done():
			t.Fatalf("exited early: %v\n%s", p.Err(), p.Log())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := p.CPU(); err != nil {
		t.Error(err)
	}
	if rss, err := p.PeakRSS(); err != nil || rss <= 0 {
		t.Errorf("PeakRSS = %d, %v", rss, err)
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop: %v\n%s", err, p.Log())
	}
	if p.Running() || !strings.Contains(p.Log(), "stopping") {
		t.Fatalf("after Stop: running %v, log %q", p.Running(), p.Log())
	}
	p.Kill() // a no-op on an exited process

	p, err = Start("sleep", "60")
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if p.Running() || p.Err() == nil {
		t.Fatalf("after Kill: running %v, exit error %v", p.Running(), p.Err())
	}
}

// TestStartEnvGivesTheChildItsEnvironment: the child sees exactly the
// variables StartEnv names, not this process's.
func TestStartEnvGivesTheChildItsEnvironment(t *testing.T) {
	t.Parallel()
	p, err := StartEnv("/usr/bin/env", []string{"CDC_RELAY_SLOT=child_slot"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		p.Kill()
		t.Fatal("env did not exit within 30s")
	}
	if p.Err() != nil {
		t.Fatalf("env: %v\n%s", p.Err(), p.Log())
	}
	if got := strings.TrimSpace(p.Log()); got != "CDC_RELAY_SLOT=child_slot" {
		t.Errorf("the child's environment is %q, want only CDC_RELAY_SLOT=child_slot", got)
	}
}
