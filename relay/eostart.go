package relay

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/relay/pipeline"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
)

// topicPosition is what the checkpoint topic said of the slot when a
// session's producer started. Whether it is this stream's position is
// decided once the session knows its stream (resumeFromTopic): after
// resume, which may create the slot, and so start a new stream.
type topicPosition struct {
	ours   sink.Checkpoint // this slot and database; no position, no stream yet
	record sink.Checkpoint // the topic's newest committed record of the slot
	found  bool            // whether there is one
	walEnd pglogrepl.LSN   // the server's WAL position then
	// history is the server's timeline's (pos.ours.Timeline) ancestors,
	// read when the record was written on an earlier timeline.
	history []replication.TimelineSwitch
}

// startExactlyOnce starts a session's transactional producer, which fences
// any earlier one of this transactional id and aborts what it left open,
// and reads the slot's last committed record from the checkpoint topic.
// Before it starts the producer, it checks that the topic's record for
// this slot, if any, was written for this database: a relay of another
// database with the same slot name would share the transactional id too,
// and the two would fence each other.
func (r *runner) startExactlyOnce(ctx context.Context, repl *replication.Conn, log *slog.Logger) (*sink.Sink, topicPosition, error) {
	eo := r.cfg.ExactlyOnce
	var pos topicPosition
	kcfg := r.kafka
	kcfg.TransactionalID, kcfg.TransactionTimeout = eo.TransactionalID, eo.TransactionTimeout
	snk, err := sink.New(kcfg)
	if err != nil {
		return nil, pos, fatalError{err}
	}
	ok := false
	defer func() {
		if !ok {
			snk.Close()
		}
	}()
	sys, err := repl.IdentifySystem(ctx)
	if err != nil {
		return nil, pos, fmt.Errorf("identify the database: %w", err)
	}
	pos.ours = sink.Checkpoint{Slot: r.cfg.Slot, SystemID: sys.SystemID, Database: sys.DBName, Timeline: sys.Timeline}
	pos.walEnd = sys.XLogPos
	ctx, cancel := context.WithTimeout(ctx, 2*eo.TransactionTimeout)
	defer cancel()
	if err := r.ensureCheckpointTopic(ctx, snk, log); err != nil {
		return nil, pos, err
	}
	// Uncommitted too, and before the producer starts: this never waits,
	// and never fences the other relay.
	if err := r.readCheckpoint(ctx, snk, &pos, false); err != nil {
		return nil, pos, err
	}
	if err := snk.InitTransactions(ctx); err != nil {
		if sink.ProducerRefused(err) {
			return nil, pos, fatalError{fmt.Errorf("%w: grant the relay's principal WRITE and DESCRIBE on the transactional id %q", err, eo.TransactionalID)}
		}
		return nil, pos, err
	}
	if err := r.readCheckpoint(ctx, snk, &pos, true); err != nil {
		return nil, pos, err
	}
	if err := readHistory(ctx, repl, &pos); err != nil {
		return nil, pos, err
	}
	ok = true
	return snk, pos, nil
}

// ensureCheckpointTopic leaves the checkpoint topic created and compacted,
// checked once per Run.
func (r *runner) ensureCheckpointTopic(ctx context.Context, snk *sink.Sink, log *slog.Logger) error {
	if r.checkpointTopicReady {
		return nil
	}
	topic := r.cfg.ExactlyOnce.CheckpointTopic
	created, err := snk.EnsureCheckpointTopic(ctx, topic)
	if err != nil {
		return err
	}
	if created {
		log.Info("checkpoint topic created", "topic", topic, "cleanup.policy", "compact")
	}
	r.checkpointTopicReady = true
	return nil
}

// readCheckpoint leaves pos.record the slot's newest record in the
// checkpoint topic (committed ones only, with committed), and refuses one
// written for another database.
func (r *runner) readCheckpoint(ctx context.Context, snk *sink.Sink, pos *topicPosition, committed bool) error {
	eo, slot := r.cfg.ExactlyOnce, r.cfg.Slot
	cp, found, err := snk.ReadCheckpoint(ctx, eo.CheckpointTopic, slot, committed)
	if err != nil {
		return err
	}
	if found && !cp.SameDatabase(pos.ours) {
		return fatalError{fmt.Errorf("the checkpoint topic %q holds a position of slot %q written by a relay of another database "+
			"(system %s, database %q; this one is system %s, database %q): two relays must not share a slot name, a checkpoint topic and a transactional id. "+
			"Give this relay its own --slot, or its own --checkpoint-topic and --transactional-id",
			eo.CheckpointTopic, slot, cp.SystemID, cp.Database, pos.ours.SystemID, pos.ours.Database)}
	}
	pos.record, pos.found = cp, found
	return nil
}

// readHistory leaves pos.history the server's timeline's ancestors when
// the topic's record was written on an earlier timeline: where that one
// ended decides whether the record's position is this server's.
func readHistory(ctx context.Context, repl *replication.Conn, pos *topicPosition) error {
	rec, server := pos.record.Timeline, pos.ours.Timeline
	if !pos.found || rec == 0 || rec >= server {
		return nil
	}
	h, err := repl.TimelineHistory(ctx, server)
	if err != nil {
		return err
	}
	pos.history = h
	return nil
}

// resumeFromTopic runs after resume: it leaves s.committed this session's
// identity in the checkpoint records (the slot, the database, the stream,
// the timeline) with the topic's position when it is this stream's
// (ownPosition) and on this server's timeline (onServerTimeline), and the
// session starting from that position when it is ahead of the slot's and
// the row's: the row takes it first (write-ahead). With write-back, the
// session starts from the slot's instead, and reads up to that position
// again to write back what Kafka has (package pipeline). A row without a stream
// id (an earlier version's) gets one, after that.
func (s *session) resumeFromTopic(ctx context.Context, pos topicPosition) error {
	row, err := s.store.Stream(ctx, s.cfg.Slot)
	if err != nil {
		return err
	}
	stream, take := ownPosition(row, pos.record, pos.found)
	s.committed = pos.ours
	s.committed.Stream = stream
	onTimeline, left := onServerTimeline(pos.record, pos.ours.Timeline, pos.history)
	switch {
	case take && !onTimeline:
		s.warnOtherTimeline(pos.record, pos.ours.Timeline, left)
	case take:
		if err := s.takePosition(pos); err != nil {
			return err
		}
	case pos.found:
		s.warnOtherStream(pos.record, stream)
	}
	switch {
	case s.committed.LSN > s.start && s.outcomes != nil:
		// Kafka committed what PostgreSQL was not told yet, perhaps
		// before write-back wrote its rows: read again from the slot,
		// not produced (package pipeline). The row keeps the slot's position.
		if err := s.loadReplay(ctx); err != nil {
			return err
		}
		if row == "" && pos.record.Stream == "" {
			// The upgrade: a row with an id would no longer take this
			// record, which the row is behind. It takes one at a start
			// with nothing to read again, or from this stream's records.
			return nil
		}
	case s.committed.LSN > s.start:
		// Kafka committed what PostgreSQL was not told yet: the row
		// takes the position first (write-ahead), then the stream.
		if err := s.store.SaveAt(ctx, s.cfg.Slot, checkpoint.Position{LSN: s.committed.LSN, CommitTime: s.committed.CommitTime}); err != nil {
			return err
		}
		s.log.Info("resuming from the checkpoint topic, ahead of the slot: Kafka committed transactions PostgreSQL was not yet told of",
			"slot", s.cfg.Slot, "at", s.committed.LSN, "slot_confirmed", s.start)
		s.start = s.committed.LSN
	}
	if row == "" {
		return s.store.SetStream(ctx, s.cfg.Slot, stream)
	}
	return nil
}

// ownPosition decides whether rec, the checkpoint topic's record of the
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
func ownPosition(row string, rec sink.Checkpoint, found bool) (stream string, take bool) {
	switch {
	case row != "":
		return row, found && rec.Stream == row
	case found && rec.Stream != "":
		return rec.Stream, true
	default:
		return checkpoint.NewStreamID(), found
	}
}

// onServerTimeline decides whether rec's position, written on timeline
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
func onServerTimeline(rec sink.Checkpoint, server int32, history []replication.TimelineSwitch) (ok bool, left pglogrepl.LSN) {
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

// warnOtherTimeline says that rec, the checkpoint topic's record of this
// stream, is not taken: it was written on another timeline, past where
// this server's timeline left it (left), or on one not in its history.
func (s *session) warnOtherTimeline(rec sink.Checkpoint, server int32, left pglogrepl.LSN) {
	eo, slot := s.cfg.ExactlyOnce, s.cfg.Slot
	attrs := []any{"topic", eo.CheckpointTopic, "slot", slot, "topic_at", rec.LSN, "topic_timeline", rec.Timeline,
		"timeline", server, "at", s.start, "stream", s.committed.Stream}
	if left == 0 {
		s.log.Warn(fmt.Sprintf("exactly-once: the checkpoint topic's position for slot %s, %s, was written on timeline %d, "+
			"which is not in the history of this server's timeline %d: another server wrote it after their histories parted "+
			"(a standby promoted from this server, or another promoted standby); resuming from the slot; "+
			"events committed on this server are all sent; records that server sent are in Kafka, of transactions this database may not have",
			slot, rec.LSN, rec.Timeline, server), attrs...)
		return
	}
	s.log.Warn(fmt.Sprintf("exactly-once: the checkpoint topic's position for slot %s, %s, was written on timeline %d "+
		"past the point %s where this server's timeline %d left it: the old primary committed transactions to Kafka "+
		"that this server never received (an asynchronous failover); resuming from the slot; events committed on the new primary "+
		"are all sent; records the old primary sent after %s are in Kafka but not in this database",
		slot, rec.LSN, rec.Timeline, left, server, left), append(attrs, "switch_point", left)...)
}

// takePosition leaves s.committed at the topic's position, this stream's.
// A position beyond the server's WAL cannot be this database's.
func (s *session) takePosition(pos topicPosition) error {
	eo, slot := s.cfg.ExactlyOnce, s.cfg.Slot
	if pos.record.LSN > pos.walEnd {
		return fatalError{fmt.Errorf("the checkpoint topic %q says slot %q was delivered up to %s, beyond this server's WAL (%s): "+
			"it was written for another database, or before a restore. Give this relay another --checkpoint-topic and --transactional-id, or another --slot",
			eo.CheckpointTopic, slot, pos.record.LSN, pos.walEnd)}
	}
	s.committed.LSN = pos.record.LSN
	s.startLog().Info("exactly-once: last committed position read", "topic", eo.CheckpointTopic, "slot", slot, "at", pos.record.LSN, "stream", s.committed.Stream)
	return nil
}

// warnOtherStream says that rec, the checkpoint topic's record of the
// slot, is another stream's, and not taken. A record without a stream id
// behind where the session starts changes nothing, and is only noted.
func (s *session) warnOtherStream(rec sink.Checkpoint, stream string) {
	eo, slot := s.cfg.ExactlyOnce, s.cfg.Slot
	if rec.Stream == "" && rec.LSN <= s.start {
		s.log.Info("exactly-once: the checkpoint topic's position of this slot, from an earlier version, is behind the slot's; resuming from the slot",
			"topic", eo.CheckpointTopic, "slot", slot, "topic_at", rec.LSN, "at", s.start, "stream", stream)
		return
	}
	other := rec.Stream
	if other == "" {
		other = "none (an earlier version)"
	}
	s.log.Warn("exactly-once: the checkpoint topic's position of this slot was written by another stream of the same database: "+
		"this database is a copy of the one that wrote it (a restored backup or a clone), or its slot was created again; "+
		"the records of this stream are sent from the slot's position. If the other database still runs a relay with this slot name "+
		"and checkpoint topic, give one of them its own --slot and --checkpoint-topic, or they fence each other",
		"topic", eo.CheckpointTopic, "slot", slot, "topic_stream", other, "topic_at", rec.LSN, "stream", stream, "at", s.start)
}

// loadReplay reads the events parked between the session's start and the
// checkpoint topic's position (s.committed), which the session reads again
// without producing (pipeline.ReplayWindow), and says so.
func (s *session) loadReplay(ctx context.Context) error {
	from, to := s.start, s.committed.LSN
	parked, err := s.failures.ParkedBetween(ctx, from, to)
	if err != nil {
		return err
	}
	s.replay = pipeline.NewReplayWindow(parked)
	s.log.Info("exactly-once with write-back: resuming from the slot's position, behind the checkpoint topic's: "+
		"the transactions between are in Kafka already and are not produced again; their rows are written back, "+
		"and the checkpoint passes them once written",
		"slot", s.cfg.Slot, "at", from, "topic_at", to, "parked_in_between", len(parked))
	return nil
}
