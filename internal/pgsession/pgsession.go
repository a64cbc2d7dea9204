// Package pgsession names a PostgreSQL server process for an operator, the
// one way the relay's messages say which session holds a lock or a
// transaction it waits for, and waits for server processes it ended to
// exit (WaitGone).
package pgsession

import "fmt"

// Session is what pg_stat_activity says of a server process.
type Session struct {
	PID  int
	App  string // application_name; empty for none
	Role string // usename; empty when not visible
	Addr string // client_addr; empty for a local socket or not visible
}

// String names the process, its application, role and client address,
// leaving out what is empty: "server process 4242 (app-worker) of role
// app from 127.0.0.1".
func (s Session) String() string { return s.describe(false) }

// Quoted is String with the application name quoted, for a name a
// database user chose that may hold spaces or punctuation.
func (s Session) Quoted() string { return s.describe(true) }

func (s Session) describe(quote bool) string {
	out := fmt.Sprintf("server process %d", s.PID)
	switch {
	case s.App != "" && quote:
		out += fmt.Sprintf(" (application_name %q)", s.App)
	case s.App != "":
		out += " (" + s.App + ")"
	}
	if s.Role != "" {
		out += " of role " + s.Role
	}
	if s.Addr != "" {
		out += " from " + s.Addr
	}
	return out
}
