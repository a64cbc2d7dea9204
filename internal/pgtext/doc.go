// Package pgtext opens the connection that reads outbox rows in the text
// format the decoder reads from the stream (TimeZone=UTC, DateStyle=ISO,
// bytea_output=hex), with row_security off, and says what fixes a read
// that row-level security would filter. `cdc-relay recover` reads its
// rows through it, and the relay reloads a parked row's event through it.
//
// Guarantees: a read on its connection returns every row of a table, or
// fails; it never returns some of the rows logical decoding publishes.
package pgtext
