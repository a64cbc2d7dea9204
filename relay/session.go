package relay

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/leader"
	"github.com/cdc-relay/cdc-relay/pubwatch"
	"github.com/cdc-relay/cdc-relay/relay/delivery/exactlyonce"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/relay/pgnotice"
	"github.com/cdc-relay/cdc-relay/relay/pipeline"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/report"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/slot"
	"github.com/cdc-relay/cdc-relay/status"
)

// session is one replication session, from taking the slot's leadership to
// the final checkpoint. Its steps run in order, each leaving true what the
// next relies on; what a step starts, end stops, last first.
type session struct {
	*runner
	lock      *leader.Lock
	repl      *replication.Conn
	walsender uint32        // the replication connection's server process
	start     pglogrepl.LSN // where the stream resumes
	// txSink, in exactly-once delivery, is this session's transactional
	// producer, and committed what its checkpoint records name (the slot,
	// the database, the stream) with the checkpoint topic's position when
	// it is this stream's.
	txSink    *sink.Sink
	committed sink.Checkpoint
	// replay, with write-back, is what the session reads again from the
	// slot up to committed without producing it (package pipeline).
	replay *pipeline.ReplayWindow

	tracker  *checkpoint.Tracker
	watch    pubwatch.Watches
	saver    *checkpoint.Saver
	confirm  checkpoint.Gate // what the stream may confirm to PostgreSQL
	order    *keyorder.Order
	pipeline *pipeline.Pipeline
	// pubSessions are the publishers' beside Kafka, in Config.Publishers'
	// order.
	pubSessions []*publisherSession

	streamCtx     context.Context // the stream's; stopStream ends it cleanly
	stopStream    context.CancelFunc
	produceCtx    context.Context // the records' and status writes'
	cancelProduce context.CancelFunc
	stopped       atomic.Pointer[error] // why stop ended the session
	shutdown      atomic.Bool           // the stream stopped for PostgreSQL's shutdown

	reconnect pgnotice.Reconnect // what the session logs of its start

	failed   bool     // the session ended with an error (for end)
	cleanups []func() // what the steps started, in order
}

// session leads, connects and streams until ctx is done or the stream
// fails.
func (r *runner) session(ctx context.Context) (err error) {
	if err := r.orphans.End(ctx, r.pool, r.cfg.Slot, r.cfg.ReplicationTimeout, r.log); err != nil {
		return err
	}
	defer r.state.setRole(report.RoleStarting)
	s := &session{runner: r, reconnect: r.reconnect}
	r.reconnect = pgnotice.Reconnect{} // Run sets it again if this session loses PostgreSQL
	defer func() { s.end(err != nil && ctx.Err() == nil) }()
	if led, err := s.lead(ctx); !led {
		return err // nil: stopped while waiting for leadership
	}
	if err := s.connect(ctx); err != nil {
		return err
	}
	if err := s.resumeAt(ctx); err != nil {
		return err
	}
	if err := s.startPipeline(ctx); err != nil {
		return err
	}
	s.startBeside(ctx)
	return s.finish(ctx, s.stream())
}

// onEnd registers f to run when the session ends, before what was
// registered earlier.
func (s *session) onEnd(f func()) { s.cleanups = append(s.cleanups, f) }

// end stops what the steps started, last first; failed says the session
// ended with an error.
func (s *session) end(failed bool) {
	s.failed = failed
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// lead waits for the slot's leadership lock, standing by meanwhile, and
// leaves this relay the slot's only reader until the session ends. It
// reports false if ctx ended while it waited, or with the error.
func (s *session) lead(ctx context.Context) (bool, error) {
	stopChecks := func() {}
	watch := leader.NewStandbyWatch(s.cfg.Slot, s.log, max(5*s.cfg.StatusInterval, leader.StandbyInactiveMin), s.state.setLeaderProblem)
	lock, err := leader.Lead(ctx, s.pool, s.cfg.Slot, s.log, func() {
		// Standing by works: the last session's error is history, and the
		// start checks say whether a takeover would. A takeover later is
		// no reconnect: its start-up lines are at info.
		s.reconnect = pgnotice.Reconnect{}
		s.state.setRole(report.RoleStandby)
		s.state.clearError()
		stopChecks = s.checkWhileStandingBy(ctx)
	}, watch)
	stopChecks()
	s.state.setLeaderProblem("")
	if err != nil || lock == nil {
		return false, err
	}
	s.lock = lock
	s.startLog().Info("leadership acquired", "slot", s.cfg.Slot)
	s.onEnd(lock.Release)
	s.state.setRole(report.RoleLeader)
	s.onEnd(func() {
		if s.failed {
			// Perhaps the network failed: the next session gets new
			// connections, and ends what this one leaves behind.
			s.pool.Reset()
			s.orphans = lock.Orphans(s.walsender)
		}
	})
	return true, nil
}

// connect opens the replication connection.
func (s *session) connect(ctx context.Context) error {
	repl, err := replication.Connect(ctx, s.cfg.postgresURL(), "cdc-relay", s.cfg.ReplicationTimeout)
	if err != nil {
		return fatal.Classify(err)
	}
	s.repl, s.walsender = repl, repl.PID()
	s.onEnd(func() { _ = repl.Close(context.Background()) })
	return nil
}

// resumeAt sets where the stream resumes: the later of the slot's position
// and the checkpoint row (resume.go), and in exactly-once delivery of the
// checkpoint topic's too when it is this stream's, which the row takes
// first (write-ahead; eostart.go). That mode's producer starts here, only
// once this relay leads, so that a relay waiting for the lead never fences
// the leader.
func (s *session) resumeAt(ctx context.Context) (err error) {
	var topic exactlyonce.Position
	if s.cfg.ExactlyOnce.Enabled {
		if s.txSink, topic, err = s.startExactlyOnce(ctx, s.repl, s.log); err != nil {
			return err
		}
		s.onEnd(s.txSink.Close)
	}
	if s.start, err = resume(ctx, s.pool, s.repl, s.store, s.cfg, s.log, s.startLog()); err != nil {
		return err
	}
	if err := slot.EnsureFailover(ctx, s.pool, slot.Failover{Slot: s.cfg.Slot, Repl: s.repl, OnSlotLoss: string(s.cfg.onSlotLoss()),
		Said: &s.state.failoverSaid, Log: s.log, StartLog: s.startLog()}); err != nil {
		return err
	}
	if s.cfg.ExactlyOnce.Enabled {
		return s.resumeFromTopic(ctx, topic)
	}
	return nil
}

// rebuildOrder holds, before the stream starts, what the status table
// keeps across restarts and leaders: the keys with held rows (with
// Config.Ordering key; those of reload rows, adopted or reset, too; the
// topics of the tables ordered by topic as topics) and the paused topics. The relay's PauseTopic and
// ResumeTopic change this session's from now on.
func (s *session) rebuildOrder(ctx context.Context) error {
	o := keyorder.New(s.cfg.Ordering != OrderingNone, s.log)
	switch topics := s.cfg.topicOrdered(); {
	case s.cfg.Ordering == OrderingTopic:
		o = keyorder.NewByTopic(s.log)
	case len(topics) > 0:
		o = keyorder.NewByTopics(s.log, topics)
		s.startLog().Info("ordering the topics of the tables with ordering: topic by topic, every other topic by key", "topics", topics)
	}
	paused, err := s.failures.PausedTopics(ctx)
	if err != nil {
		return fmt.Errorf("read the paused topics: %w", err)
	}
	held, reloads := 0, 0
	err = o.RebuildFrom(func(f func(status.Key)) error {
		return s.failures.EachHeldKey(ctx, func(k status.Key) { held++; f(k) })
	}, paused, s.eo.Holds())
	if err != nil {
		return fmt.Errorf("read the keys whose events wait behind a parked one: %w", err)
	}
	if o.OrdersKeys() {
		if err = s.failures.ReloadKeys(ctx, func(topic string, key []byte) { reloads++; o.HoldReload(topic, key) }); err != nil {
			return err
		}
	}
	s.order = o
	s.Relay.order.Store(o)
	s.onEnd(func() { s.Relay.order.CompareAndSwap(o, nil) })
	if held > 0 || len(paused) > 0 {
		s.startLog().Info("holding the events of keys behind parked events, and of paused topics", "keys", held, "paused_topics", paused)
	}
	if reloads > 0 {
		s.startLog().Info("holding the events of keys behind events adopted or reset, until they are sent", "events", reloads)
	}
	return nil
}

// stream reads the slot from start until the session's context ends or
// the stream fails, with the progress log and the table watches running
// meanwhile. When it returns, every record of the session is cancelled.
func (s *session) stream() error {
	stopProgress := s.reportProgress(progressInterval, s.tracker, s.saver)
	stopWatch := s.watch.Start()
	cfg := s.cfg
	err := s.repl.Stream(s.streamCtx, replication.Options{
		Slot:           cfg.Slot,
		Publication:    cfg.Publication,
		Messages:       len(cfg.Messages) > 0,
		Start:          s.start,
		Tracker:        s.confirm,
		StatusInterval: cfg.StatusInterval,
		StopTimeout:    cfg.StopTimeout,
		Timeout:        cfg.ReplicationTimeout,
		Logger:         s.log,
		StartedLevel:   s.reconnect.StartedLevel(),
		BeforeFinalStatus: func(ctx context.Context) error {
			if err := s.pipeline.Commit(ctx); err != nil {
				return err
			}
			s.watch.Refresh(ctx)
			return s.saver.Flush(ctx)
		},
		OnStopTimeout: s.cancelProduce,
		Pause:         &s.pause,
		OnStarted: func() {
			s.state.streaming.Store(true)
			s.state.clearError()
			s.reconnect.SayResumed(s.log, s.pgOutages, s.cfg.Slot, s.start)
		},
		OnConfirm: func(lsn pglogrepl.LSN) { s.state.confirmed.Store(uint64(lsn)) },
	}, s.pipeline.Handle)
	s.state.streaming.Store(false)
	s.state.confirmed.Store(0) // the slot's, from now on
	s.cancelProduce()
	stopProgress()
	stopWatch()
	return err
}

// finish saves the final checkpoint and returns why the session ended,
// given the stream's err: fatal errors (fatal.Error) end Run.
func (s *session) finish(ctx context.Context, err error) error {
	if err != nil || s.stopped.Load() != nil {
		// Perhaps the network failed (the stream found PostgreSQL silent,
		// the leadership check got no answer): the final checkpoint gets
		// a new connection.
		s.pool.Reset()
	}
	saveCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.watch.Refresh(saveCtx)
	final, serr := s.saver.Close(saveCtx)
	if serr != nil {
		s.log.Log(ctx, pgerr.Level(serr), "could not save the final checkpoint", "err", serr)
	}
	s.log.Log(ctx, s.endLevel(err), "replication session ended", "checkpoint", final)
	if e := s.stopped.Load(); e != nil {
		return *e
	}
	if werr := s.watch.Err(); werr != nil {
		return fatal.Error{Err: werr}
	}
	if err == nil && s.shutdown.Load() && ctx.Err() == nil {
		// Stopped so that PostgreSQL's shutdown can finish: it waits for
		// the stream to confirm what it sent, which is not saved.
		return pgnotice.ErrShuttingDown
	}
	if errors.Is(err, decoder.ErrMalformed) || errors.As(err, new(*decoder.MappingError)) {
		return fatal.Error{Err: err}
	}
	return err
}

// stop ends the session at once with err: nothing more is read, produced
// or confirmed.
func (s *session) stop(err error) {
	if s.stopped.CompareAndSwap(nil, &err) {
		switch {
		case errors.Is(err, exactlyonce.ErrRedo):
			s.log.Warn("ending the session", "err", err)
		case pgnotice.LostConnection(err):
			s.log.Debug("stopping at once: the connection to PostgreSQL was lost; the relay reconnects", "err", err)
		case pgerr.MissingPrivilege(err):
			s.log.Debug("stopping at once: the relay's role lacks a privilege; the relay says which, and reconnects", "err", err)
		default:
			s.log.Error("stopping at once", "err", err)
		}
		s.cancelProduce()
		s.repl.Abort()
	}
}
