// Package preflight checks a database against a relay's configuration at
// start-up, without changing anything: the checks that `cdc-relay
// check-config` prints, and that `cdc-relay run --config` makes before it
// starts, so that a config file naming a missing column fails there,
// naming the table and the column, rather than when the first row arrives.
//
// What it checks: wal_level is logical; the slot, if it exists, is a
// pgoutput slot of this database; the publication exists and publishes
// inserts, and includes each table (through its root, for a partitioned
// table); each table exists; every column the config names exists, with a
// type the relay can use; the write-back values (delivered, failed, dead,
// each of pending) fit the status column; the decoder accepts the columns
// as a Relation message would show them; a table whose write-back lists
// pending values has the reset trigger `cdc-relay migrate` creates, as the
// config asks for it; with message sources, the server is PostgreSQL 14
// or later ([CheckMessages]). [CheckPrivileges] says which privileges the
// session's role lacks on given tables ([RelayPrivileges]: those every
// relay's role needs on its own). [CheckTakeover] is what a standby relay
// checks while it stands by, reading only, so that it says what would
// stop it before it takes over: the tables, the message server, the
// role's privileges, and a replication connection opened and closed.
// With message sources, [WarnEmitUnmapped] and [WarnMessagesNotRecovered]
// log the start's warnings, and [CheckRecoverNeedsTable] refuses to
// recover a gap for a relay of messages only.
//
// Every one of those checks reads the catalogs only: it may run in a
// read-only session, and [CheckDatabase], [CheckTables] and [CheckTable]
// make no other. One check writes: [TryWriteBack] tries the write-back
// values on one row of the table, so that its own constraints and
// triggers say whether they take them, in a transaction it always rolls
// back. Only `cdc-relay check-config` calls it, in a transaction of its
// own that asks for read-write access; `run --config`'s start-up check
// calls CheckTables only, and reads.
//
// A [Problem] is something the operator fixes in the config or the
// database, and its message says what to do; an error is a database that
// could not be asked. One file holds each check.
package preflight
