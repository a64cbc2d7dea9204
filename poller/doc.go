// Package poller delivers parked events in the end: it claims due FAILED
// rows of the status table, produces them with the relay's producer, and
// marks them DELIVERED once Kafka acknowledged them; otherwise it backs off
// exponentially, with jitter, and marks a row DEAD after the configured
// attempts (optionally producing it to a dead-letter topic as well). A
// reload row (a reset of its outbox row, a row adopted at the switch-over)
// is first read from its outbox row as it is now (Config.Load).
//
// It runs beside the stream, on the leader only, and never holds the
// checkpoint back: a parked event was already passed by the checkpoint when
// its row was committed. So a re-delivered event arrives after later events
// of its key; the record carries its attempt count and the commit LSN of
// its transaction in the headers cdc-relay-attempts and
// cdc-relay-commit-lsn.
package poller
