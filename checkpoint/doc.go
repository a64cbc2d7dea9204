// Package checkpoint decides how far PostgreSQL may forget the WAL.
//
// A [Tracker] follows every transaction the relay has read, in stream order,
// and counts its events still on their way to Kafka. Its safe position is
// the end LSN of the newest transaction whose events, and those of every
// transaction before it, are acked by Kafka or durably recorded as failed.
// Keepalive positions enter the same queue, as transactions with no events,
// so an idle slot advances without ever overtaking an event in flight.
// The tracker also bounds memory: it counts the events and bytes in flight
// and makes the reader wait while either is at its limit.
//
// A [Store] persists the confirmed position in the relay's checkpoint
// table, beside the slot's own, so that a lost slot is noticed; a [Saver]
// keeps that row up to date while the relay streams.
//
// Each position goes with a commit time ([Position]), at or before the
// commit of every transaction after it: the commit time of the newest
// transaction at or before it (pgoutput's Begin gives each one's; a merged
// entry keeps its newest transaction's, a keepalive position the time of
// the transaction before it). `cdc-relay recover` finds the rows of a lost
// slot's transactions from that time, by their timestamp column: the time
// the row was saved says nothing of them when the relay was behind, and a
// session's start saves the row again. The store never lets the stored
// time become later than that rule allows ([Store.SaveAt]).
package checkpoint
