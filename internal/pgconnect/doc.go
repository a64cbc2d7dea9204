// Package pgconnect opens the command line's connections to PostgreSQL
// (migrate, check-config and the start-up check of run --config, status,
// failed, demo), all one way: the connection string parsed by pgx, the
// session parameters a command asks for, and a failure reported so that an
// operator can act on it, never with the password.
//
// [MultiHostWarning] says what to add to a connection string of several
// servers that may connect to a standby; run and migrate warn with it.
//
// The relay's own connections (its pool and its replication connection)
// are opened by relay and replication, with keepalives and timeouts of
// their own; [LiveURL] gives each of them its connection string:
// --postgres-url-file read again at every new connection, so that a
// rotated password needs no restart, and never logged.
package pgconnect
