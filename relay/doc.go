// Package relay is the conductor of one relay: [New] checks a [Config],
// and [Relay.Run] runs sessions, one after another, until it is told to
// stop. It decides nothing per event; it starts the engines that do, in
// order, and stops them in reverse order.
//
// What outlives a session (the runner): the connection pool with the
// start-up check (package preflight), the producers (package sink),
// write-back (delivery.TableOutcomes), the poller's row loader, the
// readiness and health checks, and the live state behind [Relay.Status]
// (package report).
//
// One session, as named steps, each leaving true what the next relies on:
//
//  1. lead: take the slot's advisory lock, or stand by (package leader),
//     checking meanwhile that a takeover would start (preflight).
//  2. connect: the replication connection (package replication).
//  3. resume: where the stream starts, the slot created when missing and
//     checked against the checkpoint row (package slot); with
//     exactly-once delivery, the checkpoint topic's position
//     (delivery/exactlyonce).
//  4. start the pipeline (package relay/pipeline) over its delivery
//     (relay/delivery, atleastonce or exactlyonce) and its key order
//     (relay/keyorder), the checkpoint's gate and saver (package
//     checkpoint), and what runs beside the stream on the leader: the
//     publication watch (package pubwatch), the poller (package poller),
//     retention (package retention), the leadership watch.
//  5. stream until the context ends or the stream fails; then stop
//     between transactions, commit what was produced and save the final
//     checkpoint.
//
// An error marked fatal (internal/fatal) ends Run: the operator must act.
// Any other ends the session only, and Run reconnects after a backoff,
// saying once that PostgreSQL went away and once that it is back (package
// relay/pgnotice). A gap in the WAL the relay read is refused, or repaired
// as `cdc-relay recover` does (package recovery) with --on-slot-loss
// recover.
//
// Everything per event happens on the goroutine that reads the replication
// stream, except the producer's acknowledgements, which come back on
// franz-go's goroutines and touch the checkpoint tracker; records a broker
// refused with their batch, which one goroutine produces again alone, in
// order; the status-table writes of undeliverable events, which run on
// goroutines of their own so that the stream never waits for them; and, in
// exactly-once delivery, the commits of Kafka transactions, on the
// batcher's goroutine. The poller produces with a Kafka client of its own.
package relay
