// Package pgnotice decides what the relay tells the operator about
// PostgreSQL: that it went away and came back, once per outage; that a
// session after a lost connection resumed, quietly; and that the relay's
// role lacks a privilege, with the GRANT that fixes it.
//
// It guarantees:
//   - one warning per outage, when the health check's pings have failed
//     for 5 s, and one line when PostgreSQL answers again, however often
//     the relay reconnects meanwhile ([Outages]); a login the server
//     refuses is said as that, not as an outage;
//   - after a lost connection, the next session's start-up lines at debug
//     (warnings stay) and one info line once it streams, unless the
//     outage lines spoke meanwhile ([Reconnect]);
//   - a missing privilege logged once per fix while it lasts, with a
//     summary every 10 minutes ([PrivilegeLog]), its error naming the fix
//     ([WithPrivilegeFix]);
//   - never a secret in a line: servers are named as host:port, never
//     with the connection string's password.
//
// Its lines, levels and texts are the relay's; it does not import relay.
package pgnotice
