// Package pipeline is one event's walk from the replication stream to its
// delivery: decode, count in flight, route, order, produce or park.
//
// A session's Pipeline takes each pgoutput message the stream reads
// (Handle) and acts on it in stream order: transaction boundaries go to the
// checkpoint tracker and the delivery; each event is counted in flight
// before it is handed on, then one copy per topic it goes to is checked
// against the key order (relay/keyorder) and produced through the
// delivery (relay/delivery), or parked in the status table through the
// ledger: poison DEAD, behind a held key WAITING, to a paused topic
// PAUSED. Every copy is settled through the ledger, never counted out of
// flight before it is delivered or parked. Nothing on the walk waits for
// Kafka or the status table.
//
// In exactly-once delivery, the transactions that end at or before the
// checkpoint topic's position are in Kafka already and are skipped; with
// write-back, the events of that window are told to write-back again
// (ReplayWindow) and stay in flight until their rows are written.
//
// The package does not import relay: the session hands it the ledger, the
// decoder, the delivery and the few callbacks it needs (Options).
package pipeline
