// Package republish publishes outbox rows read from the table again, as
// the stream would have: it is the one place that decides poison, fan-out
// by route, record filling, batching and waiting for Kafka's acks, for
// `cdc-relay recover` (rows of a time window) and `cdc-relay backfill`
// (rows of a key range). Each command's source hands its rows to a
// [Publisher], one row at a time, in the text format the decoder reads:
// recover's is a [Window] (a table's rows by its timestamp column since a
// time), backfill's stays in package backfill (its lock, snapshot and
// table of selected keys are its alone).
//
// Guarantees: when [Publisher.Flush] returns nil, Kafka acknowledged every
// record of the rows added since the last flush, or (with Options.Park)
// the status table holds the events Kafka refused for good; the ids of
// the acknowledged rows were handed to Table.Written. A row that cannot
// become a record is parked DEAD as it is added (with Options.Park), or
// skipped and logged. Without Options.Park nothing is parked: a record
// Kafka refuses ends the publish with an error naming its row.
//
// A cancelled context ends a flush with the context's error: records not
// yet answered are neither counted nor parked (Kafka may still have them,
// and publishing the rows again repeats them: delivery is at least once),
// and what earlier flushes acknowledged, parked or wrote back stays so.
package republish
