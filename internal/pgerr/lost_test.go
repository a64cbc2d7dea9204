package pgerr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// TestConnectionLost: a lost connection is at debug, since the outage
// lines speak for it; a server's refusal of anything else stays a warning,
// even while connecting.
func TestConnectionLost(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		lost bool
	}{
		{"nil", nil, false},
		{"admin shutdown", fmt.Errorf("read the WAL position: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"connection exception", &pgconn.PgError{Code: "08006"}, true},
		{"shutting down, as text", errors.New("FATAL: the database system is shutting down"), true},
		{"unexpected EOF", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true},
		{"EOF", io.EOF, true},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), true},
		{"network error", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("i/o timeout")}, true},
		{"conn closed", errors.New("save checkpoint: conn closed"), true},
		{"permission", &pgconn.PgError{Code: "42501", Message: "permission denied for table checkpoints"}, false},
		{"wrong password", fmt.Errorf("connect: %w", &pgconn.PgError{Code: "28P01"}), false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"disk full", &pgconn.PgError{Code: "53100", Message: "could not extend file: No space left on device"}, false},
		{"other", errors.New("the outbox table left the publication"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := pgerr.ConnectionLost(tt.err); got != tt.lost {
				t.Errorf("ConnectionLost(%v) = %v, want %v", tt.err, got, tt.lost)
			}
			want := slog.LevelWarn
			if tt.lost {
				want = slog.LevelDebug
			}
			if got := pgerr.Level(tt.err); got != want {
				t.Errorf("Level(%v) = %v, want %v", tt.err, got, want)
			}
		})
	}
}

// TestConnectionLostConnecting: a connection attempt that no server
// answers is a lost connection.
func TestConnectionLostConnecting(t *testing.T) {
	free, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	_, err = pgconn.Connect(context.Background(), fmt.Sprintf("postgres://u@127.0.0.1:%d/db?sslmode=disable&connect_timeout=5", free))
	if err == nil {
		t.Fatal("connected to a port nothing listens on")
	}
	if !pgerr.ConnectionLost(err) {
		t.Errorf("ConnectionLost(%v) = false, want true", err)
	}
}
