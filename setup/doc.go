// Package setup prepares a database for a relay configuration, as
// `cdc-relay migrate` does: the relay's tables, the outbox table and the
// publication for each table of a [Config] (package migrations does
// one table; with no table, a relay of messages only, once with no outbox
// table), the SQL helper cdc_relay.emit for the first message source's
// prefix when the config has messages, then the replication slot
// (slot.Prepare). A table's adopt predicate is checked before
// anything is created (adopt.go): one PostgreSQL refuses, or a slot that
// exists already, fails then. It also writes the SQL of a least-privilege
// role for the configuration.
//
// It sits above migrations and slot, and below the relay's runtime, which
// it does not need: migrations cannot import slot or relay, whose Run
// checks what migrations created, and relay runs a relay rather than
// preparing a database. Everything it does is idempotent: [Migrate] may run again and
// again, and creates only what is missing, or, for a table's reset
// trigger, what is not as the table's write-back asks.
package setup
