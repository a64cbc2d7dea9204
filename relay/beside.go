package relay

import (
	"context"
	"sync"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/tick"
	"github.com/cdc-relay/cdc-relay/leader"
	"github.com/cdc-relay/cdc-relay/poller"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/atleastonce"
	"github.com/cdc-relay/cdc-relay/relay/delivery/exactlyonce"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/relay/pipeline"
	"github.com/cdc-relay/cdc-relay/status"
)

// startPipeline sets up what the stream hands its messages to: the
// tracker from the start position, the table watches and the checkpoint
// saver that bound what PostgreSQL is told, and the pipeline with the
// session's delivery. The session's records and status writes are
// cancelled when it ends: a reconnect sends them again from the slot, and
// a stop that timed out must not stay blocked in Produce behind a full
// producer buffer, or in an insert behind a lock.
func (s *session) startPipeline(ctx context.Context) (err error) {
	cfg := s.cfg
	ms, err := s.expectedMappings(ctx)
	if err != nil {
		return err
	}
	dec, err := decoder.NewSources(ms, cfg.messageMappings())
	if err != nil {
		return fatal.Error{Err: err}
	}
	s.tracker = checkpoint.NewTracker(s.start, cfg.Limits)
	s.state.tracker.Store(s.tracker)
	s.onEnd(func() { s.state.tracker.Store(nil) })
	// The watch stops the stream when an outbox table leaves the
	// publication, and neither the checkpoint nor PostgreSQL is told a
	// position it does not vouch for.
	s.streamCtx, s.stopStream = context.WithCancel(ctx)
	s.onEnd(s.stopStream)
	if err := s.startWatches(ctx, ms); err != nil {
		return err
	}
	s.startSaver()
	if err := s.rebuildOrder(ctx); err != nil {
		return err
	}
	s.produceCtx, s.cancelProduce = context.WithCancel(context.WithoutCancel(ctx))
	s.onEnd(s.cancelProduce)
	l := delivery.NewLedger(&delivery.Ledger{Log: s.log, Causes: s.causes, Failures: s.failures, Order: s.order, Count: &s.count, Metrics: s.metrics,
		Tracker: s.tracker, FailCtx: s.produceCtx, ProduceCtx: s.produceCtx, Stop: s.stop,
		TableNames: cfg.SourceNames(), Outcomes: s.outcomes.OrNil(), WriteBack: s.outcomes.WritesBack()})
	po := pipeline.Options{Decoder: dec, Delivery: s.newDelivery(l), Relation: s.watchRelation, SkipBelow: s.committed.LSN, Replay: s.replay}
	if po.Publishers, err = s.startPublisherSessions(ctx, l); err != nil {
		return err
	}
	s.sharePublisherOrders()
	po.PublishersOf = cfg.publishersOf()
	if s.txSink != nil {
		po.ParkedBefore = s.eo.IsParked
	}
	s.pipeline = pipeline.New(l, po)
	return nil
}

// sharePublisherOrders makes the session's key orders of the publishers
// beside Kafka the relay's (Relay.RetryOf holds a corrected row's key in
// them) until the session ends.
func (s *session) sharePublisherOrders() {
	if len(s.pubSessions) == 0 {
		return
	}
	orders := make(map[string]*keyorder.Order, len(s.pubSessions))
	for _, ps := range s.pubSessions {
		orders[ps.Name] = ps.order
	}
	s.Relay.publisherOrders.Store(&orders)
	s.onEnd(func() { s.Relay.publisherOrders.CompareAndSwap(&orders, nil) })
}

// startSaver starts saving the tracker's safe position, as far as the
// table watches vouch for it, to the checkpoint row. The stream confirms to
// PostgreSQL only what the row holds (write-ahead: see resume).
func (s *session) startSaver() {
	watched := checkpoint.Gate{Tracker: s.tracker, Bounds: s.watch.Bounds()}
	s.saver = s.store.StartSaver(s.cfg.Slot, s.start, checkpoint.SaverOptions{
		Every:  s.cfg.CheckpointInterval,
		Source: watched.SafePosition,
		OnServerShutdown: func() {
			s.shutdown.Store(true)
			s.stopStream()
		},
		// Every save would fail until granted: Run says what to grant,
		// and retries, not ready meanwhile (pgnotice.PrivilegeLog).
		OnPrivilegeMissing: s.stop,
		Logger:             s.log,
	})
	saved := func() checkpoint.Position { return checkpoint.Position{LSN: s.saver.Saved()} }
	s.confirm = checkpoint.Gate{Tracker: s.tracker, Bounds: append(s.watch.Bounds(), saved)}
}

// newDelivery returns the session's delivery: at least once with the
// relay's producer or, with a transactional producer, exactly once, its
// committer running until the session ends.
func (s *session) newDelivery(l *delivery.Ledger) delivery.Delivery {
	if s.txSink == nil {
		return atleastonce.New(l, s.sink)
	}
	eo := s.cfg.ExactlyOnce
	b := exactlyonce.New(l, s.txSink, &s.eo, s.committed,
		exactlyonce.Options{Interval: eo.Interval, MaxEvents: eo.MaxEvents, CheckpointTopic: eo.CheckpointTopic})
	b.Leads = func(ctx context.Context) bool {
		held, err := s.lock.Check(ctx, leader.CheckTimeout)
		return err == nil && held
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(s.produceCtx)
	}()
	s.onEnd(func() {
		s.cancelProduce()
		<-done // before the producer closes
	})
	return b
}

// startBeside starts, on the leader only, what runs beside the stream
// until the session ends: the leadership watch (a leader whose lock
// session ends stops producing at once: another relay may take the lock
// and the slot), the poller that delivers parked events again, and
// retention.
func (s *session) startBeside(ctx context.Context) {
	sideCtx, stopSide := context.WithCancel(ctx)
	var side sync.WaitGroup
	s.onEnd(func() {
		stopSide()
		side.Wait()
	})
	side.Go(func() { s.lock.Watch(sideCtx, s.cfg.StatusInterval, leader.CheckTimeout, s.lostLead(sideCtx)) })
	wakes := newDueWakes()
	side.Go(func() { s.listenDue(sideCtx, wakes) })
	side.Go(func() { poller.New(s.failures, s.pollSink, s.pollerConfig(sideCtx, wakes)).Run(sideCtx) })
	side.Go(func() { s.cleaner.Run(sideCtx) })
	side.Go(func() { s.refreshPausedTopics(sideCtx, wakes.paused) })
	s.startPublisherPollers(sideCtx, &side)
	s.keepProgress(sideCtx, &side)
}

// lostLead returns what the leadership watch calls when the lock is lost:
// the session stops at once, unless PostgreSQL is shutting down.
func (s *session) lostLead(ctx context.Context) func(error) {
	return func(err error) {
		if pgerr.ShuttingDown(err) && s.serverShuttingDown(ctx) {
			// A fast shutdown ends every session, the lock's too, and no
			// one can take the lock until the server is back: a clean
			// stop, as when a save meets the shutdown. (A
			// pg_terminate_backend says the same, but the server still
			// takes new sessions.)
			s.shutdown.Store(true)
			s.stopStream()
			return
		}
		s.stop(err)
	}
}

// pollerConfig is the poller's configuration with the relay's logger,
// metrics and pause, the stream's topic rules, its producer's size
// limits, and the reads of rows to send again as they are now.
func (s *session) pollerConfig(ctx context.Context, wakes dueWakes) poller.Config {
	pc := s.cfg.Poller
	pc.Wake = wakes.poller
	if pc.Logger == nil {
		pc.Logger = s.log
	}
	pc.Metrics = s.metrics
	if pc.MaxBytes == 0 {
		pc.MaxBytes = s.cfg.claimBytes()
	}
	pc.Hold = s.pause.WaitResumed
	pc.Load = s.loader.LoadMany
	pc.ByTopic, pc.TopicOrdered = s.cfg.Ordering == OrderingTopic, s.cfg.topicOrdered()
	pc.PausedTopics = s.failures.PausedTopics
	pc.NextDue = s.failures.NextDue
	pc.Claimed = s.holdClaimed(wakes)
	pc.Delivered = s.releaseKeys(ctx)
	if pc.CheckRecord == nil {
		// A record Kafka would refuse for its size fails its attempt
		// without being produced, so that no later row of its key in the
		// claim overtakes it; its topic's limit is read again first, as
		// the operator may have raised it to let the record go.
		pc.CheckRecord = s.pollSink.RefusesNow
	}
	if pc.CheckTopic == nil {
		// Validated with the mapping in New: each row's topics as its
		// source's stream allows them.
		pc.CheckTopic, _ = s.cfg.SourceTopicCheck()
	}
	if pc.Sends == nil {
		pc.Sends = s.cfg.sendsOf(status.KafkaPublisher) // a reset re-arms every publisher of a table
	}
	return pc
}

// releaseKeys returns the poller's Delivered: it drops the hold of the
// delivered keys that have no held row left (Order.Release). A key whose
// release fails stays held until the poller delivers its next event.
func (s *session) releaseKeys(ctx context.Context) func([]status.Key) {
	o := s.order
	return func(keys []status.Key) {
		if err := o.ReleaseDelivered(ctx, s.failures, keys); err != nil && ctx.Err() == nil {
			s.sayRetried(ctx, "could not release the keys of delivered events; their next events wait behind them", err, "keys", len(keys))
		}
	}
}

// holdClaimed returns the poller's Claimed: the keys of the rows it is
// about to produce are held, those not held yet (a row whose topic was
// corrected) from now until their rows are delivered. In at-least-once
// delivery, the keys' new events wait in memory until the claim ends
// rather than being parked behind its rows (keyorder.Order.BeginDrain),
// so that a key whose held rows the claim delivers returns to the
// stream; a claim that carries a key's drain over to the next claim
// wakes the poller for it.
func (s *session) holdClaimed(wakes dueWakes) func(keys []status.Key) (ended func()) {
	return func(keys []status.Key) func() {
		if held := s.order.HoldRows(keys); len(held) > 0 {
			s.log.Debug("holding the keys of claimed events that were not held", "keys", len(held))
		}
		if s.txSink != nil {
			return nil
		}
		end := s.order.BeginDrain(keys)
		return func() {
			if end() {
				wakes.wakePoller()
			}
		}
	}
}

// refreshPausedTopics reads, every status interval until ctx ends, the
// paused topics, so that a pause written by another process (`cdc-relay
// pause --topic`, or a relay on standby) takes effect, and the keys of
// the held rows whose topic was corrected, Kafka's and each webhook
// publisher's, so that a correction made by another process (`cdc-relay
// failed retry --topic`, with --publisher for a webhook's) holds the
// later events of its key behind the row.
func (s *session) refreshPausedTopics(ctx context.Context, wake <-chan struct{}) {
	tick.Every(ctx, s.cfg.StatusInterval, func(ctx context.Context) bool {
		s.refreshPaused(ctx)
		s.refreshCorrected(ctx)
		return true
	}, tick.Wake(wake))
}

// refreshPaused makes the paused topics those of the pause table.
func (s *session) refreshPaused(ctx context.Context) {
	topics, err := s.failures.PausedTopics(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.sayRetried(ctx, "could not read the paused topics; trying again", err)
		}
		return
	}
	s.order.SetPaused(topics)
}

// refreshCorrected holds, in Kafka's order and in each webhook
// publisher's, the keys of the publisher's held rows whose topic was
// corrected that are not held yet.
func (s *session) refreshCorrected(ctx context.Context) {
	s.refreshCorrectedOf(ctx, status.KafkaPublisher, s.failures, s.order)
	for _, ps := range s.pubSessions {
		s.refreshCorrectedOf(ctx, ps.Name, ps.store, ps.order)
	}
}

// refreshCorrectedOf holds in order, publisher's key order, the keys of
// its held rows in store whose topic was corrected (`cdc-relay failed
// retry --topic`, with --publisher for a webhook's) that are not held
// yet; an order that holds no keys is left alone.
func (s *session) refreshCorrectedOf(ctx context.Context, publisher string, store *status.Store, order *keyorder.Order) {
	if !order.OrdersKeys() {
		return
	}
	keys, err := store.CorrectedHeldKeys(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.sayRetried(ctx, "could not read the keys of corrected events; trying again", err, "publisher", publisher)
		}
		return
	}
	held := order.HoldRows(keys)
	if len(held) == 0 {
		return
	}
	// A row read as held may have been delivered, and its key released,
	// since: asked again now that the keys are held, the store says which
	// rows are gone, and their keys are released.
	if err := order.Release(ctx, store, held); err != nil && ctx.Err() == nil {
		s.sayRetried(ctx, "could not check the keys of corrected events; their next events wait behind them", err,
			"publisher", publisher, "keys", len(held))
	}
	s.log.Info("events whose topic was corrected hold the later events of their keys", "publisher", publisher, "keys", len(held))
}
