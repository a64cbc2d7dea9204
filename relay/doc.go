// Package relay runs one relay: it checks that the database is prepared,
// takes leadership of the slot, and wires the pipeline
// replication → decoder → delivery → checkpoint until it is told to stop.
//
// One concern per file. Run, and one session of it:
//
//	relay.go       Relay, New, Run: the reconnect loop; Pause, Resume, and the
//	               parked events of a running relay
//	config.go      Config and its defaults: outbox tables, each with its
//	               mapping and, optionally, write-back, and message sources
//	               (pg_logical_emit_message), named after the tables
//	runner.go      what outlives a session: the pool (with the start-up
//	               check), the producers, retention, write-back
//	session.go     one session as named steps: lead, connect, where to
//	               resume, start the pipeline and what runs beside it,
//	               stream, finish
//	beside.go      the session's pipeline and checkpoint saver, and what
//	               runs beside the stream: the leadership watch, the poller
//	               (package poller), retention (package retention)
//	standbycheck.go  while standing by: the checks a takeover depends on,
//	               reading only; a failing one makes the standby not ready
//	resume.go      where a session resumes (package slot: the slot, created
//	               when missing, checked against the checkpoint table)
//	slotloss.go    --on-slot-loss: a gap in the WAL read repaired as
//	               `cdc-relay recover` does, and the stream goes on
//	watches.go     beside the stream: the publication watch (package
//	               pubwatch) started on the session's mappings
//	eostart.go     session start: the transactional producer, the
//	               checkpoint topic's position
//
// Beside the relay:
//
//	state.go       the live state behind Status (package report) and the
//	               metrics' snapshot
//	health.go      readiness: PostgreSQL and Kafka pinged, stats read
//	               (report.ReadDatabaseStats)
//	progress.go    the periodic progress log line
//	errors.go      which errors end Run and which a reconnect cures
//	pool.go        closing the pool behind a silent network
//	recover.go     `cdc-relay recover` on package recovery: its config,
//	               its checks, its pool, its fatal errors
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
