package pgnotice

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// TestInfoAsDebug: the start-up lines of a reconnect are at debug, its
// warnings stay warnings, and nothing they say is lost.
func TestInfoAsDebug(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(infoAsDebug{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})}).With("slot", "s")
	log.Info("replication slot found", "confirmed", "0/1")
	log.Warn("the slot is ahead of the relay's checkpoint")
	out := buf.String()
	for _, want := range []string{`level=DEBUG msg="replication slot found" slot=s confirmed=0/1`, `level=WARN msg="the slot is ahead of the relay's checkpoint" slot=s`} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	var infoBuf syncbuf.Buffer
	quiet := slog.New(infoAsDebug{slog.NewTextHandler(&infoBuf, nil)})
	quiet.Info("replication started")
	if infoBuf.String() != "" {
		t.Errorf("an info line passed at debug reached an info handler: %s", infoBuf.String())
	}
}

// TestReconnectAfter: a lost connection makes the next sessions' start
// quiet, keeping the first loss's cause and outage count however often
// the reconnect fails; any other end makes it loud again.
func TestReconnectAfter(t *testing.T) {
	o := NewOutages(slog.New(slog.DiscardHandler), "postgres://h/db")
	lost := &pgconn.PgError{Code: "57P01"}
	rc := o.ReconnectAfter(Reconnect{}, lost)
	if !rc.quiet || rc.err != lost || rc.outages != 0 {
		t.Fatalf("after a lost connection: %+v, want quiet, its error, 0 outages", rc)
	}
	o.said.Add(1)
	if again := o.ReconnectAfter(rc, errors.New("conn closed")); again != rc {
		t.Errorf("a failed reconnect changed %+v to %+v", rc, again)
	}
	if loud := o.ReconnectAfter(rc, &pgconn.PgError{Code: "42501"}); loud.quiet {
		t.Errorf("after a permission error: %+v, want the start-up lines at info", loud)
	}
}

// TestSayResumed: after a lost connection, the stream's start says once
// at info that replication resumed, unless the outage lines spoke since.
func TestSayResumed(t *testing.T) {
	for _, tt := range []struct {
		name     string
		rc       Reconnect
		outages  uint64
		wantLine bool
	}{
		{"first start", Reconnect{}, 0, false},
		{"after a blip", Reconnect{quiet: true, err: ErrShuttingDown}, 0, true},
		{"after an outage the log reported", Reconnect{quiet: true, err: ErrShuttingDown}, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf syncbuf.Buffer
			o := NewOutages(slog.New(slog.DiscardHandler), "postgres://h/db")
			o.said.Store(tt.outages)
			tt.rc.SayResumed(slog.New(slog.NewTextHandler(&buf, nil)), o, "", 0)
			if got := strings.Contains(buf.String(), "level=INFO msg=\"replication resumed"); got != tt.wantLine {
				t.Errorf("a resumed line: %v, want %v:\n%s", got, tt.wantLine, buf.String())
			}
		})
	}
}

// TestReconnectAfterAMissingPrivilege: a session ended for a missing
// privilege (said by PrivilegeLog) makes the next starts quiet, and the
// stream's start says the role has it now, not that it resumed.
func TestReconnectAfterAMissingPrivilege(t *testing.T) {
	o := NewOutages(slog.New(slog.DiscardHandler), "postgres://h/db")
	pe := PrivilegeError{err: &pgconn.PgError{Code: "42501"}, fix: "GRANT"}
	rc := o.ReconnectAfter(Reconnect{}, fmt.Errorf("session: %w", pe))
	if !rc.quiet || !rc.granted || rc.err != pe {
		t.Fatalf("after a missing privilege: %+v, want quiet, granted, its error", rc)
	}
	var buf syncbuf.Buffer
	rc.SayResumed(slog.New(slog.NewTextHandler(&buf, nil)), o, "s", 0)
	if out := buf.String(); !strings.Contains(out, "has the privileges it lacked") || strings.Contains(out, "resumed") {
		t.Errorf("the stream's start after a missing privilege said:\n%s", out)
	}
}
