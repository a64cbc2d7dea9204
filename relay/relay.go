package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/keepalive"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/poller"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/retention"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// Relay is one relay: Run it, and meanwhile, from any goroutine, read its
// Status, pause and resume it, and serve its Metrics.
type Relay struct {
	cfg      Config
	log      *slog.Logger
	metrics  *metrics.Metrics
	pause    pauseSwitch
	state    state
	count    counters
	failures atomic.Pointer[status.Store] // once Run has connected
	// writeBack is the write-back of the running relay, for the metrics;
	// nil when no table writes back.
	writeBack atomic.Pointer[tableOutcomes]
}

// New returns a relay for cfg, or the error that makes cfg unusable.
func New(cfg Config) (*Relay, error) {
	cfg = cfg.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Tables) > 1 && cfg.Retention.Outbox > 0 {
		return nil, errors.New("outbox retention deletes the rows of one outbox table: with several tables, set it to 0 and keep your own cleanup")
	}
	if err := replication.ValidSlotName(cfg.Slot); err != nil {
		return nil, fmt.Errorf("%w: choose another --slot", err)
	}
	if _, err := pgxpool.ParseConfig(cfg.PostgresURL); err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	r := &Relay{cfg: cfg, log: cfg.Logger}
	r.metrics = metrics.New(cfg.Version, r.snapshot)
	return r, nil
}

// Run runs a relay for cfg until ctx is done; see Relay.Run.
func Run(ctx context.Context, cfg Config) error {
	r, err := New(cfg)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// Metrics returns the relay's metrics; serve Metrics().Registry.
func (r *Relay) Metrics() *metrics.Metrics { return r.metrics }

// Pause pauses the relay: after the transaction being read, it reads
// nothing more from the slot (the WAL keeps the events; PostgreSQL is still
// told what was delivered), and the poller stops re-delivering parked
// events. It reports whether the relay was running. A pause lasts until
// Resume, across reconnects, but not across a restart of the process.
func (r *Relay) Pause() bool {
	if !r.pause.Pause() {
		return false
	}
	r.log.Info("paused: reading the slot stops after the current transaction")
	return true
}

// Resume undoes Pause; it reports whether the relay was paused.
func (r *Relay) Resume() bool {
	if !r.pause.Resume() {
		return false
	}
	r.log.Info("resumed")
	return true
}

// ErrNotConnected is returned by the methods that need the database before
// Run has connected to it.
var ErrNotConnected = errors.New("the relay is not connected to PostgreSQL yet")

// Failed lists parked events (see status.Store.List).
func (r *Relay) Failed(ctx context.Context, opts status.ListOptions) ([]status.Row, error) {
	s := r.failures.Load()
	if s == nil {
		return nil, ErrNotConnected
	}
	return s.List(ctx, opts)
}

// Retry makes parked events due at once (see status.Store.Retry).
func (r *Relay) Retry(ctx context.Context, opts status.RetryOptions) ([]status.Change, error) {
	s := r.failures.Load()
	if s == nil {
		return nil, ErrNotConnected
	}
	return s.Retry(ctx, opts)
}

// Run runs the relay until ctx is done (a clean stop: the current
// transaction is finished, in-flight events are acked, the position is
// confirmed, and Run returns nil) or a fatal error. A lost connection to
// PostgreSQL (a restart, a dropped replication connection) is not fatal:
// the relay reconnects with backoff and resumes from the slot's confirmed
// position, retaking leadership first. Run once.
func (r *Relay) Run(ctx context.Context) error {
	defer r.state.setRole(RoleStopped)
	cfg, log := r.cfg, r.log
	pool, err := openPool(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	defer closePool(pool)

	kcfg := cfg.Kafka
	if kcfg.Logger == nil {
		kcfg.Logger = log
	}
	if kcfg.Dial == nil {
		d := keepalive.Dialer(cfg.ReplicationTimeout)
		d.Timeout = 10 * time.Second // franz-go's default
		kcfg.Dial = d.DialContext
	}
	if kcfg.MaxBufferedRecords == 0 {
		kcfg.MaxBufferedRecords = int(cfg.Limits.Events) + 1000
	}
	if kcfg.MaxBufferedBytes == 0 && cfg.Limits.Bytes > 0 {
		kcfg.MaxBufferedBytes = int(cfg.Limits.Bytes) * 2
	}
	snk, err := sink.New(kcfg)
	if err != nil {
		return err
	}
	defer snk.Close()
	// The poller produces with a client of its own: franz-go fails every
	// record buffered behind one whose context ends, so a poller batch that
	// times out must never share a partition buffer with the stream.
	pcfg := kcfg
	pcfg.ClientID = kcfg.ClientID + "-poller"
	pcfg.MaxBufferedRecords = max(cfg.Poller.Batch, poller.DefaultConfig().Batch) * 2
	pcfg.MaxBufferedBytes = 0
	pollSink, err := sink.New(pcfg)
	if err != nil {
		return err
	}
	defer pollSink.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := snk.Ping(pingCtx); sink.AuthFailed(err) {
		cancel()
		return fmt.Errorf("Kafka refuses the relay's connection: %w", err)
	} else if err != nil {
		log.Warn("Kafka does not answer yet; events will wait and be retried", "brokers", kcfg.Brokers, "err", err)
	}
	cancel()

	retentionCfg := cfg.Retention
	if retentionCfg.Logger == nil {
		retentionCfg.Logger = log
	}
	retentionCfg.Metrics = r.metrics
	health, stopHealth := context.WithCancel(ctx)
	healthDone := make(chan struct{})
	go func() {
		defer close(healthDone)
		r.watchHealth(health, pool, snk)
	}()
	defer func() {
		stopHealth()
		<-healthDone
	}()
	rn := &runner{Relay: r, pool: pool, sink: snk, pollSink: pollSink, causes: newCauseLog(log, time.Minute), kafka: kcfg,
		cleaner: retention.New(pool, retention.Options{
			OutboxSchema: cfg.Tables[0].Mapping.Schema, OutboxTable: cfg.Tables[0].Mapping.Table, TimestampColumn: cfg.Tables[0].Mapping.TimestampColumn,
			StatusSchema: cfg.StatusSchema, StatusTable: cfg.StatusTable, Config: retentionCfg,
		}),
		store:    checkpoint.NewStore(pool, cfg.CheckpointSchema, cfg.CheckpointTable),
		failures: status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable)}
	r.failures.Store(rn.failures)
	defer r.failures.Store(nil) // the pool closes with Run
	outcomes, stopWriteBack, err := startWriteBack(pool, cfg)
	if err != nil {
		return fatalError{err}
	}
	defer stopWriteBack() // before the pool closes
	rn.outcomes = outcomes
	r.writeBack.Store(outcomes)
	backoff := time.Second
	for {
		began := time.Now()
		err := rn.session(ctx)
		switch {
		case ctx.Err() != nil:
			// Stopped, possibly while still starting; nothing is lost either
			// way: what was not confirmed is sent again after a restart.
			if errors.Is(err, replication.ErrStopTimeout) {
				log.Warn("stopped before every in-flight event was acked; they will be sent again after a restart")
			} else if err != nil && !errors.Is(err, context.Canceled) {
				log.Warn("stopped with an error", "err", err)
			}
			log.Info("relay stopped", "events", rn.count.events.Load(), "failed", rn.count.failed.Load())
			return nil
		case errors.As(err, new(fatalError)):
			r.state.sessionFailed(err)
			return err
		}
		if errors.Is(err, errRedo) {
			// A Kafka transaction aborted: what was learnt from it is
			// in eoState, and the next session goes on at once.
			continue
		}
		if err != nil {
			r.state.sessionFailed(err)
		}
		if time.Since(began) > time.Minute {
			backoff = time.Second
		}
		log.Warn("replication session ended; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// serverShuttingDown reports whether PostgreSQL refuses new sessions
// because it is shutting down.
func (r *runner) serverShuttingDown(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// An idle connection the shutdown closed fails for itself first; the
	// next one is new.
	for range 3 {
		_, err := r.pool.Exec(ctx, "SELECT 1")
		switch {
		case err == nil:
			return false
		case pgerr.ShuttingDown(err), strings.Contains(err.Error(), "connection refused"):
			return true
		}
	}
	return false
}

// leaderCheckTimeout bounds the leader's check of its lock session: one
// that does not answer for this long may be gone, and its lock with it.
const leaderCheckTimeout = 10 * time.Second

// openPool connects to PostgreSQL and checks that `cdc-relay migrate`
// prepared the database for cfg.
func openPool(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	poolCfg, err := pgxpool.ParseConfig(cfg.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	// Leadership holds one connection for the session; the status writes,
	// the poller, retention and the checkpoint saver share the rest.
	poolCfg.MaxConns = 8
	keepalive.PostgreSQL(&poolCfg.ConnConfig.Config, cfg.ReplicationTimeout)
	// A checkpoint row or a status row the relay counts on must survive a
	// crash of the server, whatever the role's or database's default: a
	// lost checkpoint save would look like a gap in the slot.
	poolCfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	if poolCfg.PingTimeout == 0 {
		// An idle connection that a partition left silent must not hold
		// up the one who takes it from the pool.
		poolCfg.PingTimeout = cfg.ReplicationTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, pgerr.Connect(&poolCfg.ConnConfig.Config, err, "")
	}
	for i := range cfg.Tables {
		if err := migrations.Check(ctx, pool, cfg.Migrations(i)); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return pool, nil
}

// runner holds what outlives a replication session within Run: the pool,
// the producers, the relay's tables.
type runner struct {
	*Relay
	pool     *pgxpool.Pool
	sink     *sink.Sink
	store    *checkpoint.Store
	failures *status.Store
	pollSink *sink.Sink         // the poller's own producer
	cleaner  *retention.Cleaner // one for the relay's life: a reconnect does not clean again at once
	outcomes *tableOutcomes     // write-back, nil when no table writes back
	causes   *causeLog
	kafka    sink.Config // the producers' configuration
	// eo is what exactly-once delivery learnt in earlier sessions, and
	// checkpointTopicReady whether its topic is known to exist.
	eo                   eoState
	checkpointTopicReady bool
	orphans              orphans // of the last session that failed
}

// session leads, connects and streams until ctx is done or the stream
// fails.
func (r *runner) session(ctx context.Context) (err error) {
	cfg, log := r.cfg, r.log
	if err := r.orphans.end(ctx, r.pool, cfg.Slot, cfg.ReplicationTimeout, log); err != nil {
		return err
	}
	defer r.state.setRole(RoleStarting)
	lock, err := lead(ctx, r.pool, cfg.Slot, log, func() {
		// Standing by works: the last session's error is history.
		r.state.setRole(RoleStandby)
		r.state.clearError()
	})
	if err != nil || lock == nil {
		return err // nil: stopped while waiting for leadership
	}
	defer lock.release()
	r.state.setRole(RoleLeader)
	var walsender uint32
	defer func() {
		if err != nil && ctx.Err() == nil {
			// Perhaps the network failed: the next session gets new
			// connections, and ends what this one leaves behind.
			r.pool.Reset()
			r.orphans = orphans{walsender: walsender, leader: lock.pid(), serverStart: lock.serverStart}
		}
	}()

	repl, err := replication.Connect(ctx, cfg.PostgresURL, "cdc-relay", cfg.ReplicationTimeout)
	if err != nil {
		return classify(err)
	}
	defer repl.Close(context.Background())
	walsender = repl.PID()

	// Exactly-once: the producer starts only now that this relay leads,
	// so that a relay waiting for the lead never fences the leader.
	var (
		txSink    *sink.Sink
		committed pglogrepl.LSN // the checkpoint topic's position
	)
	if cfg.ExactlyOnce.Enabled {
		if txSink, committed, err = r.startExactlyOnce(ctx, r.kafka, log); err != nil {
			return err
		}
		defer txSink.Close()
	}
	start, err := resume(ctx, r.pool, repl, r.store, cfg, log)
	if err != nil {
		return err
	}
	if committed > start {
		// Kafka committed what PostgreSQL was not told yet: the row
		// takes the position first (write-ahead), then the stream.
		if err := r.store.Save(ctx, cfg.Slot, committed); err != nil {
			return err
		}
		log.Info("resuming from the checkpoint topic, ahead of the slot: Kafka committed transactions PostgreSQL was not yet told of",
			"slot", cfg.Slot, "at", committed, "slot_confirmed", start)
		start = committed
	}
	dec, err := decoder.New(cfg.Mappings()...)
	if err != nil {
		return fatalError{err}
	}
	tracker := checkpoint.NewTracker(start, cfg.Limits)
	r.state.tracker.Store(tracker)
	defer r.state.tracker.Store(nil)
	// The watch stops the stream when the outbox table leaves the
	// publication, and neither the checkpoint nor PostgreSQL is told a
	// position it does not vouch for.
	streamCtx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	watch, err := watchTables(ctx, r.pool, cfg, start, stopStream, log)
	if err != nil {
		return err
	}
	watched := gate{Tracker: tracker, bounds: []func() pglogrepl.LSN{watch.Vouched}}
	// Write-ahead: PostgreSQL is told a position only once the checkpoint
	// row holds it (see resume).
	var shutdown atomic.Bool
	saver := r.store.StartSaver(cfg.Slot, start, checkpoint.SaverOptions{
		Every:  cfg.CheckpointInterval,
		Source: watched.Safe,
		OnServerShutdown: func() {
			shutdown.Store(true)
			stopStream()
		},
		Logger: log,
	})
	confirm := gate{Tracker: tracker, bounds: []func() pglogrepl.LSN{watch.Vouched, saver.Saved}}
	// Records and status-table writes of this session are cancelled when it
	// ends: a reconnect sends them again from the slot, and a stop that
	// timed out must not stay blocked in Produce behind a full producer
	// buffer, or in an insert behind a lock.
	produceCtx, cancelProduce := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelProduce()
	// stop ends the session at once with an error: nothing more is read,
	// produced or confirmed.
	var stopped atomic.Pointer[error]
	stop := func(err error) {
		if stopped.CompareAndSwap(nil, &err) {
			if errors.Is(err, errRedo) {
				log.Warn("ending the session", "err", err)
			} else {
				log.Error("stopping at once", "err", err)
			}
			cancelProduce()
			repl.Abort()
		}
	}
	p := newPipeline(&pipeline{log: log, causes: r.causes, producer: r.sink, failures: r.failures, count: &r.count, metrics: r.metrics,
		dec: dec, tracker: tracker, relation: watch.relation, failCtx: produceCtx, produceCtx: produceCtx, stop: stop,
		tableNames: cfg.TableNames(), outcomes: r.outcomes.orNil(), writeBack: r.outcomes.writesBack()})
	finalCommit := func(context.Context) error { return nil }
	if txSink != nil {
		p.skipBelow = committed
		p.txn = newTxnBatcher(p, txSink, &r.eo, cfg.Slot, cfg.ExactlyOnce)
		batcherDone := make(chan struct{})
		go func() {
			defer close(batcherDone)
			p.txn.run(produceCtx)
		}()
		defer func() {
			cancelProduce()
			<-batcherDone // before the producer closes
		}()
		finalCommit = p.txn.commit
	}

	// Beside the stream, on the leader only: the poller re-delivers parked
	// events, and retention deletes old rows. They stop when the stop
	// begins or the session ends.
	sideCtx, stopSide := context.WithCancel(ctx)
	var side sync.WaitGroup
	defer func() {
		stopSide()
		side.Wait()
	}()
	pollerCfg := cfg.Poller
	if pollerCfg.Logger == nil {
		pollerCfg.Logger = log
	}
	pollerCfg.Metrics = r.metrics
	pollerCfg.Hold = r.pause.WaitResumed
	if pollerCfg.CheckTopic == nil {
		// Validated with the mapping in Run: the same topics as the stream.
		pollerCfg.CheckTopic, _ = cfg.Tables[0].Mapping.TopicCheck()
	}
	// A leader whose lock session ends stops producing at once: another
	// relay may take the lock and the slot.
	side.Add(3)
	go func() {
		defer side.Done()
		lock.watch(sideCtx, cfg.StatusInterval, leaderCheckTimeout, func(err error) {
			if pgerr.ShuttingDown(err) && r.serverShuttingDown(sideCtx) {
				// A fast shutdown ends every session, the lock's too, and
				// no one can take the lock until the server is back: a
				// clean stop, as when a save meets the shutdown. (A
				// pg_terminate_backend says the same, but the server
				// still takes new sessions.)
				shutdown.Store(true)
				stopStream()
				return
			}
			stop(err)
		})
	}()
	go func() {
		defer side.Done()
		poller.New(r.failures, r.pollSink, pollerCfg).Run(sideCtx)
	}()
	go func() {
		defer side.Done()
		r.cleaner.Run(sideCtx)
	}()

	stopProgress := r.reportProgress(progressInterval, tracker, saver)
	stopWatch := watch.start(cfg.StatusInterval)
	err = repl.Stream(streamCtx, replication.Options{
		Slot:           cfg.Slot,
		Publication:    cfg.Publication,
		Start:          start,
		Tracker:        confirm,
		StatusInterval: cfg.StatusInterval,
		StopTimeout:    cfg.StopTimeout,
		Timeout:        cfg.ReplicationTimeout,
		Logger:         log,
		BeforeFinalStatus: func(ctx context.Context) error {
			if err := finalCommit(ctx); err != nil {
				return err
			}
			watch.refresh(ctx)
			return saver.Flush(ctx)
		},
		OnStopTimeout: cancelProduce,
		Pause:         &r.pause,
		OnStarted: func() {
			r.state.streaming.Store(true)
			r.state.clearError()
		},
		OnConfirm: func(lsn pglogrepl.LSN) { r.state.confirmed.Store(uint64(lsn)) },
	}, p.handle)
	r.state.streaming.Store(false)
	r.state.confirmed.Store(0) // the slot's, from now on
	cancelProduce()
	stopProgress()
	stopWatch()
	if err != nil || stopped.Load() != nil {
		// Perhaps the network failed (the stream found PostgreSQL silent,
		// the leadership check got no answer): the final checkpoint gets
		// a new connection.
		r.pool.Reset()
	}

	saveCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	watch.refresh(saveCtx)
	final, serr := saver.Close(saveCtx)
	if serr != nil {
		log.Warn("could not save the final checkpoint", "err", serr)
	}
	log.Info("replication session ended", "checkpoint", final)
	if e := stopped.Load(); e != nil {
		return *e
	}
	if werr := watch.Err(); werr != nil {
		return fatalError{werr}
	}
	if err == nil && shutdown.Load() && ctx.Err() == nil {
		// Stopped so that PostgreSQL's shutdown can finish: it waits for
		// the stream to confirm what it sent, which is not saved.
		return errors.New("PostgreSQL is shutting down: the stream stopped so the shutdown can finish; the relay reconnects when it is back")
	}
	if errors.Is(err, decoder.ErrMalformed) || errors.As(err, new(*decoder.MappingError)) {
		return fatalError{err}
	}
	return err
}
