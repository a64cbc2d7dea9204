package pgsession

import "testing"

func TestSession(t *testing.T) {
	for _, tt := range []struct {
		s            Session
		plain, quote string
	}{
		{Session{PID: 7}, "server process 7", "server process 7"},
		{Session{PID: 42, App: "app worker", Role: "app", Addr: "127.0.0.1"},
			"server process 42 (app worker) of role app from 127.0.0.1",
			`server process 42 (application_name "app worker") of role app from 127.0.0.1`},
		{Session{PID: 9, Role: "relay"}, "server process 9 of role relay", "server process 9 of role relay"},
	} {
		if got := tt.s.String(); got != tt.plain {
			t.Errorf("%+v.String() = %q, want %q", tt.s, got, tt.plain)
		}
		if got := tt.s.Quoted(); got != tt.quote {
			t.Errorf("%+v.Quoted() = %q, want %q", tt.s, got, tt.quote)
		}
	}
}
