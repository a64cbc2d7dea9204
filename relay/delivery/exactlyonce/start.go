package exactlyonce

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Position is what the checkpoint topic said of the slot when a
// session's producer started. Whether it is this stream's position is
// decided once the session knows its stream (OwnPosition,
// OnServerTimeline): after resume, which may create the slot, and so
// start a new stream.
type Position struct {
	Ours   sink.Checkpoint // this slot and database; no position, no stream yet
	Record sink.Checkpoint // the topic's newest committed record of the slot
	Found  bool            // whether there is one
	WALEnd pglogrepl.LSN   // the server's WAL position then
	// History is the server's timeline's (Ours.Timeline) ancestors,
	// read when the record was written on an earlier timeline.
	History []replication.TimelineSwitch
}

// StartOptions is what Start needs of the relay's exactly-once settings.
type StartOptions struct {
	Slot               string        // the replication slot, named in the topic's records
	CheckpointTopic    string        // the compacted topic of the slots' positions
	TransactionalID    string        // the producer's, fencing any earlier one
	TransactionTimeout time.Duration // the producer's; Start takes at most twice it
	// TopicReady says the checkpoint topic was checked already (once per
	// Run); Start calls OnTopicReady once it checked it.
	TopicReady   bool
	OnTopicReady func()
	Log          *slog.Logger
}

// ProducerConfig is kcfg, the relay's producer settings, for a session's
// transactional producer.
func ProducerConfig(kcfg sink.Config, o StartOptions) sink.Config {
	kcfg.TransactionalID, kcfg.TransactionTimeout = o.TransactionalID, o.TransactionTimeout
	return kcfg
}

// Start readies snk, a session's transactional producer (ProducerConfig),
// which fences any earlier one of this transactional id and aborts what it
// left open, and reads the slot's last committed record from the
// checkpoint topic, creating the topic if it is missing. Before it starts
// the producer, it checks that the topic's record for this slot, if any,
// was written for this database: a relay of another database with the
// same slot name would share the transactional id too, and the two would
// fence each other (a fatal.Error).
func Start(ctx context.Context, snk *sink.Sink, repl *replication.Conn, o StartOptions) (Position, error) {
	var pos Position
	sys, err := repl.IdentifySystem(ctx)
	if err != nil {
		return pos, fmt.Errorf("identify the database: %w", err)
	}
	pos.Ours = sink.Checkpoint{Slot: o.Slot, SystemID: sys.SystemID, Database: sys.DBName, Timeline: sys.Timeline}
	pos.WALEnd = sys.XLogPos
	ctx, cancel := context.WithTimeout(ctx, 2*o.TransactionTimeout)
	defer cancel()
	if err := ensureCheckpointTopic(ctx, snk, o); err != nil {
		return pos, err
	}
	// Uncommitted too, and before the producer starts: this never waits,
	// and never fences the other relay.
	if err := readCheckpoint(ctx, snk, o, &pos, false); err != nil {
		return pos, err
	}
	if err := snk.InitTransactions(ctx); err != nil {
		if sink.ProducerRefused(err) {
			return pos, fatal.Error{Err: fmt.Errorf("%w: grant the relay's principal WRITE and DESCRIBE on the transactional id %q", err, o.TransactionalID)}
		}
		return pos, err
	}
	if err := readCheckpoint(ctx, snk, o, &pos, true); err != nil {
		return pos, err
	}
	return pos, readHistory(ctx, repl, &pos)
}

// ensureCheckpointTopic leaves the checkpoint topic created and compacted,
// checked once per Run.
func ensureCheckpointTopic(ctx context.Context, snk *sink.Sink, o StartOptions) error {
	if o.TopicReady {
		return nil
	}
	created, err := snk.EnsureCheckpointTopic(ctx, o.CheckpointTopic)
	if err != nil {
		return err
	}
	if created {
		o.Log.Info("checkpoint topic created", "topic", o.CheckpointTopic, "cleanup.policy", "compact")
	}
	if o.OnTopicReady != nil {
		o.OnTopicReady()
	}
	return nil
}

// readCheckpoint leaves pos.Record the slot's newest record in the
// checkpoint topic (committed ones only, with committed), and refuses one
// written for another database.
func readCheckpoint(ctx context.Context, snk *sink.Sink, o StartOptions, pos *Position, committed bool) error {
	cp, found, err := snk.ReadCheckpoint(ctx, o.CheckpointTopic, o.Slot, committed)
	if err != nil {
		return err
	}
	if found && !cp.SameDatabase(pos.Ours) {
		return fatal.Error{Err: fmt.Errorf("the checkpoint topic %q holds a position of slot %q written by a relay of another database "+
			"(system %s, database %q; this one is system %s, database %q): two relays must not share a slot name, a checkpoint topic and a transactional id. "+
			"Give this relay its own --slot, or its own --checkpoint-topic and --transactional-id",
			o.CheckpointTopic, o.Slot, cp.SystemID, cp.Database, pos.Ours.SystemID, pos.Ours.Database)}
	}
	pos.Record, pos.Found = cp, found
	return nil
}

// readHistory leaves pos.History the server's timeline's ancestors when
// the topic's record was written on an earlier timeline: where that one
// ended decides whether the record's position is this server's.
func readHistory(ctx context.Context, repl *replication.Conn, pos *Position) error {
	rec, server := pos.Record.Timeline, pos.Ours.Timeline
	if !pos.Found || rec == 0 || rec >= server {
		return nil
	}
	h, err := repl.TimelineHistory(ctx, server)
	if err != nil {
		return err
	}
	pos.History = h
	return nil
}

// OwnPosition decides whether rec, the checkpoint topic's record of the
// slot (if found), is a position of this stream, whose checkpoint row has
// the stream id row, and returns the stream's id:
//   - a record of the row's stream is;
//   - a record of another stream is not: this database is a copy of the
//     one that wrote it (its relay created its own slot, so a new stream),
//     or the slot was created again;
//   - a record without a stream id (an earlier version's) is, while the row
//     has none either: both are of that version (the upgrade). Once the row
//     has an id, the start that gave it one took that position already
//     (write-ahead), or the row's slot was created since: not again;
//   - a row without an id continues the stream of the record it takes, or
//     starts a new one.
func OwnPosition(row string, rec sink.Checkpoint, found bool) (stream string, take bool) {
	switch {
	case row != "":
		return row, found && rec.Stream == row
	case found && rec.Stream != "":
		return rec.Stream, true
	default:
		return checkpoint.NewStreamID(), found
	}
}

// OnServerTimeline decides whether rec's position, written on timeline
// rec.Timeline, is one of this server's, on timeline server, whose
// ancestors' switch points are history. When rec's timeline is an
// ancestor, left is where it ended in this server's history (0 otherwise).
//   - a record without a timeline (an earlier version's), or of this
//     timeline, is (as far as the timeline tells);
//   - a record of an ancestor is when its position is at or before the
//     point where this server's history left that timeline: the server had
//     all the WAL up to it. Past that point, the old primary committed
//     transactions this server never received, and this timeline reuses
//     those positions for its own;
//   - a record of a later timeline, or of one not in this server's
//     history (another branch), is not.
func OnServerTimeline(rec sink.Checkpoint, server int32, history []replication.TimelineSwitch) (ok bool, left pglogrepl.LSN) {
	switch {
	case rec.Timeline == 0 || rec.Timeline == server:
		return true, 0
	case rec.Timeline > server:
		return false, 0
	}
	at, ancestor := replication.SwitchPoint(history, rec.Timeline)
	if !ancestor {
		return false, 0
	}
	return rec.LSN <= at, at
}
