package relay

import (
	"context"
	"log/slog"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/pubwatch"
)

// recoverMargin is how long before the last good position a printed
// recover command starts: recover's own default --margin (see
// pubwatch.RecoverMargin).
const recoverMargin = pubwatch.RecoverMargin

// publicationWatch is what the publication watch (package pubwatch) reads
// of c: the slot, the publication and the outbox tables' mappings, with
// the checkpoint store that keeps the publication marks and log.
func (c Config) publicationWatch(store *checkpoint.Store, log *slog.Logger) pubwatch.Config {
	return pubwatch.Config{Slot: c.Slot, Publication: c.Publication, Tables: c.Mappings(), Store: store, Every: c.StatusInterval, Log: log}
}

// expectedMappings returns the session's mappings, table i at index i,
// each expecting the optional columns its table has or had when an
// earlier session of the slot started (see pubwatch.ExpectedMappings).
func (s *session) expectedMappings(ctx context.Context) ([]decoder.Mapping, error) {
	ms, expected, err := pubwatch.ExpectedMappings(ctx, s.pool, s.cfg.publicationWatch(s.store, s.log), s.expected)
	s.expected = expected
	return ms, err
}

// startWatches starts the session's table watches on ms, the mappings of
// expectedMappings, and records what they found in the checkpoint row
// (see pubwatch.Watch); the next session of the Run starts from what they
// last found right.
func (s *session) startWatches(ctx context.Context, ms []decoder.Mapping) (err error) {
	cfg := s.cfg.publicationWatch(s.store, s.log)
	cfg.Tables = ms
	s.watch, err = pubwatch.Watch(ctx, s.pool, cfg, pubwatch.Session{Start: s.start, Prev: s.watchMarks, Expected: s.expected, Stop: s.stopStream})
	if s.watch != nil {
		s.onEnd(func() { s.watchMarks = s.watch.Marks() }) // for the next session
	}
	return err
}

// watchRelation tells the table watches of a Relation message (see
// pubwatch.Watches.Relation).
func (s *session) watchRelation(ctx context.Context, rel decoder.Relation) error {
	return s.watch.Relation(ctx, rel)
}

// publicationUndecodable returns a fatal error when err, a session's, is
// the walsender refusing to decode a publication that was missing from the
// WAL it must decode next although it exists now; nil for any other error
// (see pubwatch.Undecodable).
func (rn *runner) publicationUndecodable(ctx context.Context, err error) error {
	store := checkpoint.NewStore(rn.pool, rn.cfg.CheckpointSchema, rn.cfg.CheckpointTable)
	return pubwatch.Undecodable(ctx, rn.pool, rn.cfg.publicationWatch(store, rn.cfg.Logger), err)
}
