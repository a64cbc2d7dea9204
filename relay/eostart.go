package relay

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/relay/delivery/exactlyonce"
	"github.com/cdc-relay/cdc-relay/relay/pipeline"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
)

// startExactlyOnce starts a session's transactional producer and reads
// the slot's last committed record from the checkpoint topic
// (exactlyonce.Start), the topic checked once per Run.
func (r *runner) startExactlyOnce(ctx context.Context, repl *replication.Conn, log *slog.Logger) (*sink.Sink, exactlyonce.Position, error) {
	eo := r.cfg.ExactlyOnce
	o := exactlyonce.StartOptions{Slot: r.cfg.Slot, CheckpointTopic: eo.CheckpointTopic, TransactionalID: eo.TransactionalID,
		TransactionTimeout: eo.TransactionTimeout, TopicReady: r.checkpointTopicReady, OnTopicReady: func() { r.checkpointTopicReady = true }, Log: log}
	snk, err := sink.New(exactlyonce.ProducerConfig(r.kafka, o))
	if err != nil {
		return nil, exactlyonce.Position{}, fatal.Error{Err: err}
	}
	pos, err := exactlyonce.Start(ctx, snk, repl, o)
	if err != nil {
		snk.Close()
		return nil, pos, err
	}
	return snk, pos, nil
}

// resumeFromTopic runs after resume: it leaves s.committed this session's
// identity in the checkpoint records (the slot, the database, the stream,
// the timeline) with the topic's position when it is this stream's
// (exactlyonce.OwnPosition) and on this server's timeline
// (exactlyonce.OnServerTimeline), and the session starting from that
// position when it is ahead of the slot's and the row's: the row takes it
// first (write-ahead). With write-back, the session starts from the
// slot's instead, and reads up to that position again to write back what
// Kafka has (pipeline.ReplayWindow). A row without a stream id (an earlier
// version's) gets one, after that.
func (s *session) resumeFromTopic(ctx context.Context, pos exactlyonce.Position) error {
	row, err := s.store.Stream(ctx, s.cfg.Slot)
	if err != nil {
		return err
	}
	stream, take := exactlyonce.OwnPosition(row, pos.Record, pos.Found)
	s.committed = pos.Ours
	s.committed.Stream = stream
	onTimeline, left := exactlyonce.OnServerTimeline(pos.Record, pos.Ours.Timeline, pos.History)
	switch {
	case take && !onTimeline:
		s.warnOtherTimeline(pos.Record, pos.Ours.Timeline, left)
	case take:
		if err := s.takePosition(pos); err != nil {
			return err
		}
	case pos.Found:
		s.warnOtherStream(pos.Record, stream)
	}
	switch {
	case s.committed.LSN > s.start && s.outcomes != nil:
		// Kafka committed what PostgreSQL was not told yet, perhaps
		// before write-back wrote its rows: read again from the slot,
		// not produced (pipeline.ReplayWindow). The row keeps the slot's position.
		if err := s.loadReplay(ctx); err != nil {
			return err
		}
		if row == "" && pos.Record.Stream == "" {
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
func (s *session) takePosition(pos exactlyonce.Position) error {
	eo, slot := s.cfg.ExactlyOnce, s.cfg.Slot
	if pos.Record.LSN > pos.WALEnd {
		return fatal.Error{Err: fmt.Errorf("the checkpoint topic %q says slot %q was delivered up to %s, beyond this server's WAL (%s): "+
			"it was written for another database, or before a restore. Give this relay another --checkpoint-topic and --transactional-id, or another --slot",
			eo.CheckpointTopic, slot, pos.Record.LSN, pos.WALEnd)}
	}
	s.committed.LSN = pos.Record.LSN
	s.startLog().Info("exactly-once: last committed position read", "topic", eo.CheckpointTopic, "slot", slot, "at", pos.Record.LSN, "stream", s.committed.Stream)
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
