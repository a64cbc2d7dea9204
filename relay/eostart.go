package relay

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
)

// startExactlyOnce starts a session's transactional producer, which fences
// any earlier one of this transactional id and aborts what it left open,
// and reads the slot's last committed position from the checkpoint topic
// (found false when there is none). Before it starts the producer, it
// checks that the topic's position for this slot, if any, was written for
// this database: a relay of another database with the same slot name would
// share the transactional id too, and the two would fence each other. A
// position beyond the server's WAL is refused for the same reason.
func (r *runner) startExactlyOnce(ctx context.Context, repl *replication.Conn, log *slog.Logger) (*sink.Sink, sink.Checkpoint, error) {
	eo, slot := r.cfg.ExactlyOnce, r.cfg.Slot
	var none sink.Checkpoint
	kcfg := r.kafka
	kcfg.TransactionalID, kcfg.TransactionTimeout = eo.TransactionalID, eo.TransactionTimeout
	snk, err := sink.New(kcfg)
	if err != nil {
		return nil, none, fatalError{err}
	}
	ok := false
	defer func() {
		if !ok {
			snk.Close()
		}
	}()
	sys, err := repl.IdentifySystem(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("identify the database: %w", err)
	}
	ours := sink.Checkpoint{Slot: slot, SystemID: sys.SystemID, Database: sys.DBName}
	ctx, cancel := context.WithTimeout(ctx, 2*eo.TransactionTimeout)
	defer cancel()
	if !r.checkpointTopicReady {
		created, err := snk.EnsureCheckpointTopic(ctx, eo.CheckpointTopic)
		if err != nil {
			return nil, none, err
		}
		if created {
			log.Info("checkpoint topic created", "topic", eo.CheckpointTopic, "cleanup.policy", "compact")
		}
		r.checkpointTopicReady = true
	}
	foreign := func(cp sink.Checkpoint) error {
		return fatalError{fmt.Errorf("the checkpoint topic %q holds a position of slot %q written by a relay of another database "+
			"(system %s, database %q; this one is system %s, database %q): two relays must not share a slot name, a checkpoint topic and a transactional id. "+
			"Give this relay its own --slot, or its own --checkpoint-topic and --transactional-id",
			eo.CheckpointTopic, slot, cp.SystemID, cp.Database, ours.SystemID, ours.Database)}
	}
	// Uncommitted too, and before the producer starts: this never waits,
	// and never fences the other relay.
	if cp, found, err := snk.ReadCheckpoint(ctx, eo.CheckpointTopic, slot, false); err != nil {
		return nil, none, err
	} else if found && !cp.SameDatabase(ours) {
		return nil, none, foreign(cp)
	}
	if err := snk.InitTransactions(ctx); err != nil {
		if sink.ProducerRefused(err) {
			return nil, none, fatalError{fmt.Errorf("%w: grant the relay's principal WRITE and DESCRIBE on the transactional id %q", err, eo.TransactionalID)}
		}
		return nil, none, err
	}
	cp, found, err := snk.ReadCheckpoint(ctx, eo.CheckpointTopic, slot, true)
	switch {
	case err != nil:
		return nil, none, err
	case !found:
		ours.LSN = 0
	case !cp.SameDatabase(ours):
		return nil, none, foreign(cp)
	case cp.LSN > sys.XLogPos:
		return nil, none, fatalError{fmt.Errorf("the checkpoint topic %q says slot %q was delivered up to %s, beyond this server's WAL (%s): "+
			"it was written for another database, or before a restore. Give this relay another --checkpoint-topic and --transactional-id, or another --slot",
			eo.CheckpointTopic, slot, cp.LSN, sys.XLogPos)}
	default:
		ours.LSN = cp.LSN
		log.Info("exactly-once: last committed position read", "topic", eo.CheckpointTopic, "slot", slot, "at", cp.LSN)
	}
	ok = true
	return snk, ours, nil
}
