// Package relay runs one relay: it checks the database is prepared, takes
// leadership of the slot, and wires the pipeline of DESIGN.md —
// replication → decoder → sink → checkpoint — until it is told to stop.
//
// Everything per event happens on the goroutine that reads the replication
// stream, except the producer's acknowledgements, which come back on
// franz-go's goroutines and only touch the checkpoint tracker.
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
	"unsafe"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// Config is everything a relay needs. See DefaultConfig.
type Config struct {
	// PostgresURL is the database with the outbox table. The role needs the
	// REPLICATION attribute.
	PostgresURL string
	// Slot and Publication name the replication slot (created if missing)
	// and the publication (created by `cdc-relay migrate`).
	Slot, Publication string
	// Mapping maps the outbox table onto Kafka records.
	Mapping decoder.Mapping
	// StatusSchema/StatusTable and CheckpointSchema/CheckpointTable name the
	// relay's tables.
	StatusSchema, StatusTable         string
	CheckpointSchema, CheckpointTable string
	// Kafka configures the producer.
	Kafka sink.Config
	// Limits bound the events and bytes in flight.
	Limits checkpoint.Limits
	// StatusInterval is the most time between standby status updates.
	StatusInterval time.Duration
	// StopTimeout bounds a graceful stop.
	StopTimeout time.Duration
	// CheckpointInterval is how often the confirmed position is saved in
	// the checkpoint table (when it moved).
	CheckpointInterval time.Duration
	// AcceptSlotLoss lets the relay create a new slot although the
	// checkpoint table shows an earlier one existed (events committed while
	// no slot existed are then not relayed).
	AcceptSlotLoss bool
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults the command line starts from.
func DefaultConfig() Config {
	return Config{
		Slot:               "cdc_relay",
		Publication:        "cdc_relay",
		Mapping:            decoder.DefaultMapping(),
		StatusSchema:       "public",
		StatusTable:        "outbox_delivery",
		CheckpointSchema:   "public",
		CheckpointTable:    "cdc_relay_checkpoint",
		Kafka:              sink.Config{ClientID: "cdc-relay", Linger: 5 * time.Millisecond},
		Limits:             checkpoint.Limits{Events: 10000, Bytes: 64 << 20},
		StatusInterval:     time.Second,
		StopTimeout:        30 * time.Second,
		CheckpointInterval: 10 * time.Second,
	}
}

// Run runs the relay until ctx is done (a clean stop: the current
// transaction is finished, in-flight events are acked, the position is
// confirmed, and Run returns nil) or a fatal error. A lost connection to
// PostgreSQL (a restart, a dropped replication connection) is not fatal:
// the relay reconnects with backoff and resumes from the slot's confirmed
// position, retaking leadership first.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
		cfg.Logger = log
	}
	if err := cfg.Mapping.Validate(); err != nil {
		return err
	}
	poolCfg, err := pgxpool.ParseConfig(cfg.PostgresURL)
	if err != nil {
		return fmt.Errorf("parse PostgreSQL URL: %w", err)
	}
	poolCfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer pool.Close()
	if err := preflight(ctx, pool, cfg); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}

	kcfg := cfg.Kafka
	if kcfg.Logger == nil {
		kcfg.Logger = log
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
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := snk.Ping(pingCtx); err != nil {
		log.Warn("Kafka does not answer yet; events will wait and be retried", "brokers", kcfg.Brokers, "err", err)
	}
	cancel()

	r := &runner{cfg: cfg, log: log, pool: pool, sink: snk,
		store:    checkpoint.NewStore(pool, cfg.CheckpointSchema, cfg.CheckpointTable),
		failures: status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable)}
	backoff := time.Second
	for {
		began := time.Now()
		err := r.session(ctx)
		switch {
		case ctx.Err() != nil:
			// Stopped, possibly while still starting; nothing is lost either
			// way: what was not confirmed is sent again after a restart.
			if errors.Is(err, replication.ErrStopTimeout) {
				log.Warn("stopped before every in-flight event was acked; they will be sent again after a restart")
			} else if err != nil && !errors.Is(err, context.Canceled) {
				log.Warn("stopped with an error", "err", err)
			}
			log.Info("relay stopped", "events", r.events.Load(), "failed", r.failed.Load())
			return nil
		case errors.As(err, new(fatalError)):
			return err
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

// fatalError marks errors a reconnect cannot cure: the operator must act.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

// runner holds what outlives a replication session: the pool, the producer
// and the counters.
type runner struct {
	cfg      Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	sink     *sink.Sink
	store    *checkpoint.Store
	failures *status.Store

	events atomic.Int64 // acked by Kafka
	failed atomic.Int64 // recorded in the status table
}

// session leads, connects and streams until ctx is done or the stream
// fails.
func (r *runner) session(ctx context.Context) error {
	cfg, log := r.cfg, r.log
	release, err := lead(ctx, r.pool, cfg.Slot, log)
	if err != nil || release == nil {
		return err // nil: stopped while waiting for leadership
	}
	defer release()

	repl, err := replication.Connect(ctx, cfg.PostgresURL, "cdc-relay")
	if err != nil {
		return classify(err)
	}
	defer repl.Close(context.Background())

	start, err := prepareSlot(ctx, r.pool, repl, r.store, cfg, log)
	if err != nil {
		return err
	}
	dec, err := decoder.New(cfg.Mapping)
	if err != nil {
		return fatalError{err}
	}
	tracker := checkpoint.NewTracker(start, cfg.Limits)
	// Records of this session are cancelled when it ends: a reconnect sends
	// them again from the slot, and a stop that timed out must not stay
	// blocked in Produce behind a full producer buffer.
	produceCtx, cancelProduce := context.WithCancel(context.Background())
	defer cancelProduce()
	p := &pipeline{runner: r, dec: dec, tracker: tracker, ctx: context.WithoutCancel(ctx), produceCtx: produceCtx}
	p.onAck = p.ack // one func value for every record

	var confirmed atomic.Uint64
	confirmed.Store(uint64(start))
	saverCtx, stopSaver := context.WithCancel(context.WithoutCancel(ctx))
	var saverWG sync.WaitGroup
	saverWG.Add(1)
	go func() {
		defer saverWG.Done()
		r.saveLoop(saverCtx, &confirmed, tracker)
	}()

	err = repl.Stream(ctx, replication.Options{
		Slot:           cfg.Slot,
		Publication:    cfg.Publication,
		Tracker:        tracker,
		StatusInterval: cfg.StatusInterval,
		StopTimeout:    cfg.StopTimeout,
		Logger:         log,
		OnConfirm:      func(lsn pglogrepl.LSN) { confirmed.Store(uint64(lsn)) },
		OnStopTimeout:  cancelProduce,
	}, p.handle)
	cancelProduce()
	stopSaver()
	saverWG.Wait()

	final := pglogrepl.LSN(confirmed.Load())
	saveCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := r.store.Save(saveCtx, cfg.Slot, final); serr != nil {
		log.Warn("could not save the final checkpoint", "err", serr)
	}
	log.Info("replication session ended", "confirmed", final)
	if errors.Is(err, decoder.ErrMalformed) || errors.As(err, new(*decoder.MappingError)) {
		return fatalError{err}
	}
	return err
}

// classify marks connection errors the operator must fix as fatal: bad
// credentials, missing privileges, pg_hba rejections.
func classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "28") || strings.HasPrefix(pgErr.Code, "42")) {
		return fatalError{err}
	}
	return err
}

// preflight checks what `cdc-relay migrate` prepares, and says to run it.
func preflight(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	if err := migrations.CheckWALLevel(ctx, pool); err != nil {
		return err
	}
	m := cfg.Mapping
	var outbox, statusT, cp, pub, inPub bool
	err := pool.QueryRow(ctx, `SELECT
		to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL, to_regclass($3) IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $4),
		EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $4 AND schemaname = $5 AND tablename = $6)`,
		pgx.Identifier{m.Schema, m.Table}.Sanitize(),
		pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize(),
		pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize(),
		cfg.Publication, m.Schema, m.Table).Scan(&outbox, &statusT, &cp, &pub, &inPub)
	if err != nil {
		return fmt.Errorf("check the database is prepared: %w", err)
	}
	switch {
	case !outbox:
		return fmt.Errorf("outbox table %s.%s does not exist: create it with `cdc-relay migrate`, or point --table at your outbox table", m.Schema, m.Table)
	case !statusT || !cp:
		return fmt.Errorf("the relay's tables (%s.%s, %s.%s) do not exist: run `cdc-relay migrate` first",
			cfg.StatusSchema, cfg.StatusTable, cfg.CheckpointSchema, cfg.CheckpointTable)
	case !pub:
		return fmt.Errorf("publication %q does not exist: run `cdc-relay migrate` first", cfg.Publication)
	case !inPub:
		return fmt.Errorf("publication %q does not include %s.%s: run `cdc-relay migrate` with the same --table and --publication", cfg.Publication, m.Schema, m.Table)
	}
	return nil
}

// lead takes the slot's advisory lock on a connection held for the relay's
// life, waiting while another relay holds it. It returns nil, nil if ctx
// ends while waiting.
func lead(ctx context.Context, pool *pgxpool.Pool, slot string, log *slog.Logger) (func(), error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire leadership connection: %w", err)
	}
	const q = "SELECT pg_try_advisory_lock(hashtextextended('cdc-relay/' || $1, 0))"
	warned := false
	for {
		var ok bool
		if err := conn.QueryRow(ctx, q, slot).Scan(&ok); err != nil {
			conn.Release()
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, fmt.Errorf("take leadership lock for slot %q: %w", slot, err)
		}
		if ok {
			log.Info("leadership acquired", "slot", slot)
			return func() {
				// Closing the session releases the lock.
				_ = conn.Conn().Close(context.Background())
				conn.Release()
			}, nil
		}
		if !warned {
			log.Info("another relay leads this slot; standing by", "slot", slot)
			warned = true
		}
		select {
		case <-ctx.Done():
			conn.Release()
			return nil, nil
		case <-time.After(2 * time.Second):
		}
	}
}

// prepareSlot creates the slot when missing and returns the position the
// stream resumes from.
func prepareSlot(ctx context.Context, pool *pgxpool.Pool, repl *replication.Conn, store *checkpoint.Store, cfg Config, log *slog.Logger) (pglogrepl.LSN, error) {
	stored, haveStored, err := store.Load(ctx, cfg.Slot)
	if err != nil {
		return 0, err
	}
	var plugin, confirmed string
	var sameDB bool
	err = pool.QueryRow(ctx, `SELECT plugin, coalesce(confirmed_flush_lsn::text, ''), database = current_database()
		FROM pg_replication_slots WHERE slot_name = $1`, cfg.Slot).Scan(&plugin, &confirmed, &sameDB)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if haveStored && !cfg.AcceptSlotLoss {
			return 0, fatalError{fmt.Errorf("replication slot %q does not exist, but the checkpoint table shows the relay confirmed %s on it: "+
				"the slot was dropped, and events committed since then may be missing from Kafka. "+
				"Check, then start with --accept-slot-loss to create a new slot", cfg.Slot, stored)}
		}
		lsn, err := repl.CreateSlot(ctx, cfg.Slot)
		if err != nil {
			return 0, classify(err)
		}
		if err := store.Reset(ctx, cfg.Slot, lsn); err != nil {
			return 0, err
		}
		log.Info("replication slot created", "slot", cfg.Slot, "at", lsn)
		return lsn, nil
	case err != nil:
		return 0, fmt.Errorf("look up replication slot %q: %w", cfg.Slot, err)
	}
	if plugin != "pgoutput" {
		return 0, fatalError{fmt.Errorf("replication slot %q uses plugin %q; the relay needs pgoutput: choose another --slot", cfg.Slot, plugin)}
	}
	if !sameDB {
		return 0, fatalError{fmt.Errorf("replication slot %q belongs to another database: choose another --slot", cfg.Slot)}
	}
	lsn, err := pglogrepl.ParseLSN(confirmed)
	if err != nil {
		return 0, fmt.Errorf("replication slot %q: confirmed_flush_lsn %q: %w", cfg.Slot, confirmed, err)
	}
	if haveStored && stored > lsn {
		log.Warn("the slot is behind the relay's checkpoint; transactions after the slot's position will be sent again",
			"slot", cfg.Slot, "slot_confirmed", lsn, "checkpoint", stored)
	}
	log.Info("resuming from the slot's confirmed position", "slot", cfg.Slot, "at", lsn)
	return lsn, nil
}

// saveLoop saves the confirmed position every CheckpointInterval when it
// moved, and logs progress.
func (r *runner) saveLoop(ctx context.Context, confirmed *atomic.Uint64, tracker *checkpoint.Tracker) {
	t := time.NewTicker(r.cfg.CheckpointInterval)
	defer t.Stop()
	var saved uint64
	events := r.events.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c := confirmed.Load(); c != saved {
			if err := r.store.Save(ctx, r.cfg.Slot, pglogrepl.LSN(c)); err != nil {
				if ctx.Err() == nil {
					r.log.Warn("could not save checkpoint", "err", err)
				}
				continue
			}
			saved = c
		}
		if n := r.events.Load(); n != events {
			inflight, _ := tracker.InFlight()
			r.log.Info("progress", "events", n, "failed", r.failed.Load(), "in_flight", inflight, "confirmed", pglogrepl.LSN(saved))
			events = n
		}
	}
}

// pipeline handles the stream's messages in order.
type pipeline struct {
	*runner
	dec     *decoder.Decoder
	tracker *checkpoint.Tracker
	ctx     context.Context

	produceCtx  context.Context
	onAck       func(*kgo.Record, error)
	tx          *checkpoint.Txn
	undelivered atomic.Int64
}

// handle decodes one pgoutput message and acts on it: transaction
// boundaries go to the tracker, events to the producer (or, if poison, to
// the status table), counted in flight first.
func (p *pipeline) handle(start pglogrepl.LSN, data []byte) error {
	msg, err := p.dec.Decode(data)
	if err != nil {
		return fmt.Errorf("decode pgoutput message at %s: %w", start, err)
	}
	switch msg.Kind {
	case decoder.KindBegin:
		p.tx = p.tracker.Begin()
	case decoder.KindCommit:
		if p.tx == nil {
			return fmt.Errorf("commit at %s without a begin", start)
		}
		p.tracker.Commit(p.tx, pglogrepl.LSN(msg.EndLSN))
		p.tx = nil
	case decoder.KindEvent:
		if p.tx == nil {
			return fmt.Errorf("insert at %s outside a transaction", start)
		}
		it := &inflight{Context: p.produceCtx, tx: p.tx, ev: msg.Event}
		it.ev.Headers = append(it.evHeaders[:0], msg.Event.Headers...)
		it.size = it.ev.Size() + int(unsafe.Sizeof(inflight{}))
		p.tracker.Add(it.tx, it.size)
		if msg.Poison != nil {
			go p.fail(it, msg.Poison)
			return nil
		}
		sink.Fill(&it.rec, it.recHeaders[:0], &it.ev)
		it.rec.Context = it
		p.sink.Produce(p.produceCtx, &it.rec, p.onAck)
	}
	return nil
}

// inflight is one event on its way to Kafka, in one allocation: the record,
// room for its headers, and what the checkpoint needs once Kafka answers.
// The record's Context is the inflight itself (it embeds the session's
// produce context, so cancellation works as for any record), which lets one
// callback serve every record without a closure per event.
type inflight struct {
	context.Context
	rec        kgo.Record
	recHeaders [4]kgo.RecordHeader
	ev         decoder.Event // kept for the status table
	evHeaders  [4]decoder.Header
	tx         *checkpoint.Txn
	size       int
}

// ack is the producer callback of every record.
func (p *pipeline) ack(r *kgo.Record, err error) {
	it := r.Context.(*inflight)
	switch {
	case err == nil:
		p.events.Add(1)
		p.tracker.Done(it.tx, it.size)
	case sink.Permanent(err):
		go p.fail(it, err)
	default:
		// Not delivered (the producer is closing): the event stays in
		// flight, its transaction unconfirmed, and PostgreSQL sends it again
		// after a restart. Said once, not per event.
		if p.undelivered.Add(1) == 1 {
			p.log.Warn("events not delivered; they will be sent again after a restart", "first_id", string(it.ev.ID), "err", err)
		}
	}
}

// fail records a permanently undeliverable event in the status table,
// retrying until it is stored, then lets the checkpoint pass it.
func (p *pipeline) fail(it *inflight, reason error) {
	ev := &it.ev
	p.log.Warn("event cannot be delivered; recording it in the status table", "id", string(ev.ID), "topic", ev.Topic, "reason", reason)
	backoff := 100 * time.Millisecond
	for {
		err := p.failures.Failed(p.ctx, ev, reason)
		if err == nil {
			break
		}
		p.log.Error("could not record a failed event; retrying", "id", string(ev.ID), "err", err)
		time.Sleep(backoff)
		backoff = min(2*backoff, 10*time.Second)
	}
	p.failed.Add(1)
	p.tracker.Done(it.tx, it.size)
}
