// Package examples holds no code: each directory beside this file is a
// ready configuration for one outbox layout in use today (schema.sql, the
// table as its team created it; app.sql, the inserts its application makes;
// relay.yaml, the relay's mapping of it). See README.md.
//
// Its test applies each schema.sql and app.sql to a throwaway PostgreSQL
// cluster and checks that the tables, the rows and the relay.yaml of each
// example agree: every column relay.yaml names exists with a type the relay
// reads, the write-back values are accepted by the status column, the
// publication carries the application's inserts, and the rows go to the
// topics the README says.
package examples
