// Package status keeps the status table: one row per event the fast path
// could not deliver (too large, an invalid or missing topic, an
// undecodable row), with a full copy of the record and the reason, so the
// stream can move past it without losing it.
//
// [Store.Failed] parks an event as FAILED, and [Store.Dead] as DEAD; given
// the relay's outbox tables ([SourceTables]), each row records the table
// its event came from. [Store.Waiting] parks an event
// behind the held events of its topic and key, and [Store.Paused] one of a
// paused topic; a key's held rows (FAILED, DEAD not skipped,
// WAITING, PAUSED) are delivered in id order, which is commit order.
// [Store.HeldKeys] and [Store.StillHeld] say which keys hold rows, and
// [Store.CorrectedHeldKeys] which of them hold a row whose topic an
// operator corrected (`cdc-relay failed retry --topic`).
// [Store.Claim] hands the poller the rows deliverable in order (due FAILED
// heads and the rows that follow them without a gap) and
// records what became of them: DELIVERED, FAILED again with the next
// attempt time, or DEAD; with [Unordered] (`--ordering none`)
// it takes due FAILED rows whatever their keys hold, as before ordered
// parking. The pause table keeps the topics
// paused for a slot ([Pauses]). List, Get, Retry, Skip and Purge
// serve the operator's `cdc-relay failed` commands;
// Retry with RetryOptions.Topic corrects a row's topic first.
//
// The status table and the pause table hold the rows of every publisher
// (issue 48: Kafka's, [KafkaPublisher], and webhook publishers'); a store
// is one publisher's ([Publisher], Kafka's by default) and reads and
// writes that publisher's rows only, a parked event's identity including
// its publisher (built so far: the tables and the store; the relay runs
// Kafka's store only).
//
// Given [WriteBack], every change of a row also reaches the outbox row of
// its event, in the same transaction. A reload row stands for an event to
// send as its outbox row is now, without a copy: a row the team set back
// to a pending status (the reset trigger's function adds or converts it),
// or one [Store.Adopt] adopted at the switch-over (a pending status, or an
// adopt predicate, selects it, in one INSERT … SELECT, with a routed
// table's topics); the poller
// reads its record and Claim stores it.
package status
