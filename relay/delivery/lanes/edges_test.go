package lanes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// TestProduceAfterCloseIsCalledBack: a record handed to Produce after
// Close is called back at once, never left in flight.
func TestProduceAfterCloseIsCalledBack(t *testing.T) {
	p := New(&fakeSender{}, quick(Config{Lanes: 1}))
	p.Close()
	o := newOutcomes(1)
	p.Produce(context.Background(), rec("k", 0), o.done)
	select {
	case <-o.all:
	case <-time.After(500 * time.Millisecond):
		t.Fatal("a record produced after Close was never called back")
	}
}

// TestOneBadKeyIsNotAnOutage: one key whose requests keep failing (a 5xx
// for that event only) while every other request is answered is no
// outage: the other keys' records are sent, none parked unsent.
func TestOneBadKeyIsNotAnOutage(t *testing.T) {
	s := &fakeSender{delay: 5 * time.Millisecond}
	s.answer = func(vals []string) Answer {
		for _, v := range vals {
			if strings.HasPrefix(v, "bad/") {
				return Answer{Err: errors.New("500 Internal Server Error"), Retry: true}
			}
		}
		return Answer{}
	}
	var logs syncbuf.Buffer
	p := New(s, quick(Config{Lanes: 4, RetryFor: 50 * time.Millisecond, ProbeEvery: time.Hour,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}))
	defer p.Close()
	o := newOutcomes(1)
	p.Produce(context.Background(), rec("bad", 0), o.done)
	stop := time.After(60 * time.Millisecond)
	n := 0
	good := newOutcomes(1 << 30)
loop:
	for {
		select {
		case <-stop:
			break loop
		default:
		}
		p.Produce(context.Background(), rec(fmt.Sprint("g", n%16), n), good.done)
		n++
		time.Sleep(200 * time.Microsecond)
	}
	o.wait(t)
	time.Sleep(20 * time.Millisecond)
	o2 := newOutcomes(20)
	for i := range 20 {
		p.Produce(context.Background(), rec(fmt.Sprint("h", i), i), o2.done)
	}
	o2.wait(t)
	failed := 0
	for _, err := range o2.errs {
		if err != nil {
			failed++
		}
	}
	good.mu.Lock()
	goodFailed := 0
	for _, err := range good.errs {
		if err != nil {
			goodFailed++
		}
	}
	good.mu.Unlock()
	t.Logf("healthy keys' records called back with an error during the bad key's retries: %d of %d; log:\n%s", goodFailed, n, logs.String())
	if failed > 0 || goodFailed > 0 {
		t.Fatalf("%d of 20 records of healthy keys not sent after one event's 5xx, while %d others were answered; log:\n%s",
			failed, n, logs.String())
	}
}

// TestProbeHonoursRetryAfter: a Retry-After longer than RetryFor holds
// the probes back as long.
func TestProbeHonoursRetryAfter(t *testing.T) {
	s := &fakeSender{answer: func([]string) Answer {
		return Answer{Err: errors.New("429 Too Many Requests"), Retry: true, RetryAfter: time.Hour}
	}}
	p := New(s, Config{Lanes: 1, RetryFor: 50 * time.Millisecond, ProbeEvery: 10 * time.Millisecond, Publisher: "partner"})
	defer p.Close()
	o := newOutcomes(50)
	for i := range 50 {
		p.Produce(context.Background(), rec(fmt.Sprint("k", i), i), o.done)
		time.Sleep(2 * time.Millisecond)
	}
	o.wait(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.requests > 1 {
		t.Fatalf("%d requests within %v of a Retry-After of 1h", s.requests, 100*time.Millisecond)
	}
}
