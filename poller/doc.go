// Package poller delivers parked events in the end: it claims the rows of
// the status table that are deliverable in order (due FAILED rows, and
// the WAITING and PAUSED rows that follow their key's head; see
// status.Store.Claim), produces them with the relay's producer, and marks
// them DELIVERED once Kafka acknowledged them; otherwise it backs off
// exponentially, with jitter, and marks a row DEAD after the configured
// attempts (optionally producing it to a dead-letter topic as well). A
// reload row (a reset of its outbox row, a row adopted at the switch-over)
// is first read from its outbox row as it is now (Config.Load; [RowLoader]
// reads it, as the stream would have made its record).
//
// A claim's rows are produced together, in id order, so each key's go in
// commit order into its partition, whose order the idempotent producer
// keeps; a row whose topic or record is refused before producing
// (Config.CheckTopic, Config.CheckRecord) stops its key, its later rows
// not produced. A key's first row not delivered is its head, and its
// later rows stay as they were, except one Kafka took nevertheless: it is
// marked DELIVERED, and counted and logged as an order violation when the
// head was refused.
// Config.Claimed hears of the claimed keys before any row is produced,
// once per look (with none when it claimed nothing), and returns what
// ends the claim, which the poller calls once the outcomes are recorded
// (the relay's drain of a held key, which keeps the key's new events in
// memory meanwhile, ends then); Config.Delivered hears of the keys
// delivered once their rows say so. Config.Wake makes the poller look at
// once rather than at its next interval (a notification on
// status.DueChannel: an operator's retry, a runbook's reset).
//
// Over the status table itself (*status.Store), Run overlaps claims: the
// next one is claimed and its reload rows loaded while the last one's
// outcomes are written, in a transaction of their own, when Kafka
// acknowledged every row of it; its rows are produced only once the last
// one committed and ended, so the relay hears of one claim at a time.
//
// It runs beside the stream, on the leader only, and never holds the
// checkpoint back: a parked event was already passed by the checkpoint when
// its row was committed. With ordered parking (the relay's default), the
// relay parks a held key's later events behind it, so a key's events
// arrive in commit order; without it, a re-delivered event arrives after
// later events of its key. The record carries its attempt count and the
// commit LSN of its transaction in the headers cdc-relay-attempts and
// cdc-relay-commit-lsn (none on an adopted or reset row, whose commit the
// relay did not read).
package poller
