// Package recovery is `cdc-relay recover`: after a gap in the WAL the
// relay read (its slot dropped, invalidated, or re-created or advanced by
// another consumer), it publishes again the outbox rows of the gap's
// window and records where the stream resumes. The relay's
// `--on-slot-loss recover` runs it too. It takes a narrow [Config] and a
// pool the caller opened, and imports no relay.
//
// What it guarantees:
//
//   - It holds the slot's leadership ([leader.TryLead]) from start to end:
//     no relay streams the slot meanwhile, and a relay that runs is named
//     as the reason it refuses.
//   - Nothing is done when there is nothing to recover: a slot not ahead
//     of the relay's checkpoint, without [Options.Since], is
//     [ErrNothingToRecover], with nothing published and nothing changed.
//   - The slot is created again only when it is missing, invalidated, or
//     [Options.RecreateSlot] asks, and before any row is read, so that
//     whatever commits from then on is kept; the checkpoint row takes a
//     new stream id first. A dry run ([Options.DryRun]) counts the rows,
//     and the events it would park for each publisher beside Kafka, and
//     changes nothing.
//   - Every outbox row whose timestamp column is at or after the window's
//     start (the checkpoint's time less [Options.Margin], or
//     [Options.Since]; 12 hours wider for a column without a time zone) is
//     published again, through the mapping, as the stream would have:
//     at-least-once, consumers deduplicate on the id header. A row that
//     cannot become its record, or that Kafka refuses for good, is parked
//     in the status table; a delivered row of a table that writes back is
//     written back as delivered.
//   - A window that selects no row while its table holds rows written
//     after the relay's last checkpoint is refused, not taken for an
//     empty gap ([republish.Window.CheckGap]).
//   - The window's rows whose events go to a publisher beside Kafka (a
//     webhook) are parked for it as reload rows, once per event and
//     topic (status.Store.Adopt), and its poller sends them once a relay
//     runs: Kafka's records never go to a topic whose events go to other
//     publishers only.
//   - Only once every row is in Kafka is the checkpoint moved to the
//     slot's position ([Result.Resume]), where the next run resumes;
//     without a gap it stays where it is. Either way the publication's
//     marks are recorded as they are now ([pubwatch.RecordPublication]).
//
// An error the operator must act on (the mapping, a window that selects
// nothing, a producer Kafka refuses, --recreate-slot without a checkpoint)
// is a [fatal.Error]; the caller decides what fatal means.
package recovery
