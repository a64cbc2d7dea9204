package replication_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/tcpproxy"
	"github.com/cdc-relay/cdc-relay/replication"
)

// tracker is a fake of the checkpoint tracker: nothing is ever in flight,
// and the safe position follows the keepalives.
type tracker struct{ safe atomic.Uint64 }

func (t *tracker) Safe() pglogrepl.LSN                { return pglogrepl.LSN(t.safe.Load()) }
func (t *tracker) Position(lsn pglogrepl.LSN)         { t.safe.Store(uint64(max(t.Safe(), lsn))) }
func (t *tracker) Full() bool                         { return false }
func (t *tracker) WaitCapacity(context.Context) error { return nil }
func (t *tracker) WaitIdle(context.Context) error     { return nil }
func (t *tracker) InFlight() (int64, int64)           { return 0, 0 }

// waitActive waits until a stream reads slot, failing the test after 10s.
func waitActive(t *testing.T, ctx context.Context, admin *pgx.Conn, slot string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if active, err := replication.SlotActive(ctx, admin, slot); err != nil {
			t.Fatal(err)
		} else if active {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream did not start within 10s")
		}
	}
}

// TestStreamTimeout: an idle server sends nothing of its own accord, so
// the stream asks it for keepalives and runs on; a server behind a silent
// network ends the stream with ErrSilent within the timeout and a status
// interval or so.
//
// It measures time, so it does not run beside the package's other tests.
func TestStreamTimeout(t *testing.T) {
	ctx, db, admin := pg.ConnectDB(t, 2*time.Minute)
	cfg, err := pgconn.ParseConfig(db.URL())
	if err != nil {
		t.Fatal(err)
	}
	server := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))

	const timeout = 1500 * time.Millisecond
	tests := []struct {
		name    string
		silence bool
	}{
		{"idle server", false},
		{"silent network", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy, err := tcpproxy.Start(server)
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			conn, err := replication.Connect(ctx, strings.Replace(db.URL(), server, proxy.Addr(), 1), "test", timeout)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			slot := db.Name + "_s" + strconv.Itoa(i)
			created, err := conn.CreateSlot(ctx, slot)
			start := created.ConsistentPoint
			if err != nil {
				t.Fatal(err)
			}
			tr := &tracker{}
			tr.safe.Store(uint64(start))
			// Idle for several timeouts; a status update goes out every
			// timeout, so only the asked-for keepalives come back.
			sctx, stop := context.WithTimeout(ctx, 4*timeout)
			defer stop()
			done := make(chan error, 1)
			began := time.Now()
			go func() {
				done <- conn.Stream(sctx, replication.Options{Slot: slot, Publication: "p", Tracker: tr,
					StatusInterval: timeout, StopTimeout: timeout, Timeout: timeout}, func(pglogrepl.LSN, []byte) error { return nil })
			}()
			if tt.silence {
				waitActive(t, ctx, admin, slot)
				proxy.Silence()
			}
			err = <-done
			took := time.Since(began)
			switch {
			case !tt.silence && err != nil:
				t.Fatalf("the stream of an idle server ended after %s: %v", took, err)
			case tt.silence && !errors.Is(err, replication.ErrSilent):
				t.Fatalf("the stream behind a silent network ended after %s with %v, want ErrSilent", took, err)
			case tt.silence && took > timeout+time.Second:
				t.Fatalf("the silence was noticed after %s, want about %s", took, timeout)
			}
			t.Logf("%s: returned after %s: %v", tt.name, took.Round(10*time.Millisecond), err)
		})
	}
}

// pauser is a pause switch that stays paused.
type pauser struct{}

func (pauser) Paused() bool { return true }
func (pauser) WaitResumed(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestStopWhilePaused: a paused stream reads nothing, not even a
// committed insert, keeps the connection alive with status updates, and
// a stop ends it cleanly within a status interval or so.
//
// It measures time, so it does not run beside the package's other tests.
func TestStopWhilePaused(t *testing.T) {
	ctx, db, admin := pg.ConnectDB(t, 2*time.Minute)
	conn, err := replication.Connect(ctx, db.URL(), "test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	slot := db.Name + "_paused"
	created, err := conn.CreateSlot(ctx, slot)
	start := created.ConsistentPoint
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	tr := &tracker{}
	tr.safe.Store(uint64(start))
	sctx, stop := context.WithCancel(ctx)
	var got atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- conn.Stream(sctx, replication.Options{Slot: slot, Publication: "p", Tracker: tr, Pause: pauser{},
			StatusInterval: 200 * time.Millisecond, StopTimeout: 5 * time.Second, Timeout: 5 * time.Second},
			func(pglogrepl.LSN, []byte) error { got.Add(1); return nil })
	}()
	waitActive(t, ctx, admin, slot)
	time.Sleep(time.Second) // a window in which an unpaused stream would read the insert
	stop()
	began := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a stop while paused: %v, want a clean stop", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stop while paused did not end the stream within 5s")
	}
	if n := got.Load(); n != 0 {
		t.Errorf("a paused stream handed on %d messages", n)
	}
	t.Logf("stopped %s after the stop began", time.Since(began).Round(time.Millisecond))
}
