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
package checkpoint
