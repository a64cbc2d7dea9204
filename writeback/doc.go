// Package writeback writes a delivery's outcome back to the outbox row the
// event came from, for teams whose dashboards and runbooks read a status
// column of their own: after Kafka acknowledged the event, the row's status
// becomes the delivered value and its timestamp column now; after the event
// was parked, the failed value, the error, the attempts and the next
// attempt; and so on for what becomes of it later (delivered by the
// poller, given up on: the dead value).
//
// The fast path's deliveries go through a [Writer], beside the stream,
// never in it: updates are batched (one UPDATE … WHERE id = ANY($1) per
// table per flush), retried when they fail, split to find a row that
// refuses, and each outcome's [Done] is told once its row is written: the
// relay confirms the event's position only then, so a crash loses no
// outcome, and the relay's in-flight limits bound how many wait. What
// becomes of a parked event goes through [Rows], in the status
// table's own transaction, so the row and the status table never
// disagree: a claim's delivered rows of a table with one statement
// ([Rows.WriteMany]), written row by row when a row refuses it. The publication publishes inserts only, so these
// updates never come back to the relay.
//
// [Writer.Delivered], called on the producer's ack path, appends to a
// queue and does nothing else; [Writer.Run] flushes: it takes the queue,
// keeps the latest outcome of each id, and writes them with statements
// built from the table's column types, splitting a statement a row
// refuses; a failure is retried with backoff and logged at most once a
// minute per table and cause, and a refused row given up.
package writeback
