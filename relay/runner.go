package relay

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/keepalive"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/ratelog"
	"github.com/cdc-relay/cdc-relay/leader"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/poller"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/pubwatch"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/exactlyonce"
	"github.com/cdc-relay/cdc-relay/relay/pgnotice"
	"github.com/cdc-relay/cdc-relay/retention"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// runner holds what outlives a replication session within Run: the pool,
// the producers, the relay's tables, the parts beside the stream that
// live as long as Run.
type runner struct {
	*Relay
	pool     *pgxpool.Pool
	sink     *sink.Sink
	store    *checkpoint.Store
	failures *status.Store
	pollSink *sink.Sink // the poller's own producer
	// publishers are the publishers beside Kafka (Config.Publishers).
	publishers []*publisherEngine
	cleaner    *retention.Cleaner      // one for the relay's life: a reconnect does not clean again at once
	outcomes   *delivery.TableOutcomes // write-back, nil when no table writes back
	loader     *poller.RowLoader       // the poller's reads of rows to send again as they are now
	causes     delivery.CauseLog
	kafka      sink.Config // the producers' configuration
	// eo is what exactly-once delivery learnt in earlier sessions, and
	// checkpointTopicReady whether its topic is known to exist.
	eo                   exactlyonce.State
	checkpointTopicReady bool
	orphans              leader.Orphans // of the last session that failed
	// watchMarks are what the last session's table watches last found
	// right (pubwatch.Watches.Marks).
	watchMarks []pubwatch.Mark
	// expected are the optional columns each outbox table had when the
	// last session started, table i at index i (pubwatch.ExpectedMappings).
	expected [][]string
	// progress are the teams' progress tables, checked (keepProgress).
	progress []progressTable
	// reconnect is what the next session logs of its start: set by Run
	// when a session lost PostgreSQL.
	reconnect pgnotice.Reconnect

	closers []func() // what newRunner started, in order

	// privileges logs the privileges the relay's role lacks, by fix.
	privileges *pgnotice.PrivilegeLog
	// retried logs the database errors of work tried again at its next
	// interval, by message (sayRetried).
	retried *ratelog.Logger
}

// newRunner connects to PostgreSQL and checks that the database is
// prepared, makes the producers and tells whether Kafka answers, and
// starts the parts that live as long as Run: the health checks and
// write-back. Close undoes it. It returns nil, nil if ctx ends while it
// connects.
func (r *Relay) newRunner(ctx context.Context) (*runner, error) {
	rn := &runner{Relay: r, causes: delivery.NewCauseLog(r.log, time.Minute, nil), privileges: pgnotice.NewPrivilegeLog(r.log),
		retried: ratelog.New(r.log, ratelog.Config{Every: retriedLogEvery, KeyAttr: "what", CountAttr: "failures",
			Summary: "the same database error again; trying again", Last: []string{"err"}})}
	ready := false
	defer func() {
		if !ready {
			rn.close()
		}
	}()
	var err error
	if rn.pool, err = openPool(ctx, r.cfg); err != nil {
		if ctx.Err() != nil {
			return nil, nil // stopped while starting
		}
		return nil, err
	}
	rn.closing(func() { closePool(rn.pool) })
	preflight.WarnEmitUnmapped(ctx, rn.pool, r.cfg.Messages, r.log)
	if err := rn.startProducers(ctx); err != nil {
		return nil, err
	}
	rn.closing(r.startHealth(ctx, rn.pool, rn.sink))
	rn.store = checkpoint.NewStore(rn.pool, r.cfg.CheckpointSchema, r.cfg.CheckpointTable)
	outcomes, stopWriteBack, err := delivery.StartWriteBack(rn.pool, r.cfg.Tables, r.cfg.Logger)
	if err != nil {
		return nil, fatal.Error{Err: err}
	}
	rn.closing(stopWriteBack) // before the pool closes
	rn.outcomes = outcomes
	r.writeBack.Store(outcomes)
	if rn.progress, err = rn.checkProgress(ctx); err != nil {
		return nil, err
	}
	storeOpts := []status.Option{status.SourceTables(r.cfg.SourceNames()...), status.WriteBack(outcomes.Rows()), status.SharedWriteBack(outbox.SharedWriteBack(r.cfg.Tables)...),
		status.Pauses(r.cfg.CheckpointSchema, migrations.PauseTable, r.cfg.Slot), pausedByProgress(rn.progress, outbox.KafkaPublisher), status.ClaimBytes(r.cfg.claimBytes())}
	switch r.cfg.Ordering {
	case OrderingNone:
		storeOpts = append(storeOpts, status.Unordered()) // the poller claims due rows as before ordered parking
	case OrderingTopic:
		storeOpts = append(storeOpts, status.ByTopic())
	default:
		storeOpts = append(storeOpts, status.ByTopics(r.cfg.topicOrdered()...)) // none: every topic by key
	}
	rn.failures = status.NewStore(rn.pool, r.cfg.StatusSchema, r.cfg.StatusTable, storeOpts...)
	if err := rn.startPublishers(publisherStoreOptions(r.cfg, outcomes.Rows())); err != nil {
		return nil, err
	}
	mappings, err := pubwatch.WithNotNull(ctx, rn.pool, r.cfg.Mappings()) // the stream's sessions read them too (pubwatch.ExpectedMappings)
	if err != nil {
		return nil, err
	}
	if rn.loader, err = poller.NewRowLoader(r.cfg.postgresURL, r.cfg.TableNames(), mappings); err != nil {
		return nil, fatal.Error{Err: err}
	}
	rn.closing(rn.loader.Close)
	rn.cleaner = newCleaner(rn.pool, r.cfg, r)
	r.failures.Store(rn.failures)
	byName := make(map[string]*status.Store, len(rn.publishers))
	for _, e := range rn.publishers {
		byName[e.Name] = e.store
	}
	r.publisherFailures.Store(&byName)
	rn.closing(func() { r.failures.Store(nil); r.publisherFailures.Store(nil) }) // the pool closes with Run
	ready = true
	return rn, nil
}

// closing registers f to run at close, before what was registered earlier.
func (rn *runner) closing(f func()) { rn.closers = append(rn.closers, f) }

// close stops what newRunner started, last first.
func (rn *runner) close() {
	for i := len(rn.closers) - 1; i >= 0; i-- {
		rn.closers[i]()
	}
	rn.closers = nil
}

// startProducers makes the stream's producer and the poller's, and pings
// Kafka: a broker that refuses the relay's TLS or SASL settings is fatal,
// one that does not answer yet is not.
func (rn *runner) startProducers(ctx context.Context) (err error) {
	cfg := rn.cfg
	rn.kafka = producerConfig(cfg, rn.log)
	if rn.sink, err = sink.New(rn.kafka); err != nil {
		return err
	}
	rn.closing(rn.sink.Close)
	// The poller produces with a client of its own: franz-go fails every
	// record buffered behind one whose context ends, so a poller batch that
	// times out must never share a partition buffer with the stream.
	pcfg := rn.kafka
	pcfg.ClientID = rn.kafka.ClientID + "-poller"
	pcfg.MaxBufferedRecords = max(cfg.Poller.Batch, poller.DefaultConfig().Batch) * 2
	pcfg.MaxBufferedBytes = 0
	if rn.pollSink, err = sink.New(pcfg); err != nil {
		return err
	}
	rn.closing(rn.pollSink.Close)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rn.sink.Ping(pingCtx); sink.AuthFailed(err) {
		return fmt.Errorf("Kafka refuses the relay's connection: %w", err)
	} else if err != nil {
		rn.log.Warn("Kafka does not answer yet; events will wait and be retried", "brokers", rn.kafka.Brokers, "err", err)
	}
	return nil
}

// producerConfig is cfg's Kafka configuration with the relay's defaults:
// its logger, one outage log for all its producers, TCP keepalives that drop a dead broker within the
// replication timeout, and buffers above the in-flight limits, so that
// Produce never blocks the reader.
func producerConfig(cfg Config, log *slog.Logger) sink.Config {
	kcfg := cfg.Kafka
	if kcfg.Logger == nil {
		kcfg.Logger = log
	}
	if kcfg.Outages == nil {
		kcfg.Outages = sink.NewOutages(kcfg.Logger, kcfg.Brokers)
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
	return kcfg
}

// newCleaner returns the retention of cfg's first outbox table and its
// status table, counted in r's metrics; of the status table alone for a
// relay of messages only (they are in no table). It keeps the outbox rows
// whose event the poller is still to send (adopted or reset rows).
func newCleaner(pool *pgxpool.Pool, cfg Config, r *Relay) *retention.Cleaner {
	rc := cfg.Retention
	rc.ByTopic, rc.TopicOrdered = cfg.Ordering == OrderingTopic, cfg.topicOrdered()
	if rc.Logger == nil {
		rc.Logger = r.log
	}
	rc.Metrics = r.metrics
	var m decoder.Mapping
	var source string
	if len(cfg.Tables) > 0 {
		m, source = cfg.Tables[0].Mapping, cfg.TableNames()[0]
	} else {
		rc.Outbox = 0
	}
	return retention.New(pool, retention.Options{
		OutboxSchema: m.Schema, OutboxTable: m.Table, TimestampColumn: m.TimestampColumn, TimestampUnit: m.TimestampUnit, TimeZone: m.TimeZone,
		IDColumn: m.IDColumn, SourceTable: source,
		StatusSchema: cfg.StatusSchema, StatusTable: cfg.StatusTable, Config: rc,
	})
}

// openPool connects to PostgreSQL and checks that `cdc-relay migrate`
// prepared the database for cfg. Each new connection of the pool reads
// the connection string again (Config.PostgresURLFile, and .pgpass).
func openPool(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	poolCfg, err := parsePoolConfig(cfg, cfg.PostgresURL)
	if err != nil {
		return nil, err
	}
	// Leadership holds one connection for the session; the status writes,
	// the poller, retention and the checkpoint saver share the rest.
	poolCfg.MaxConns = 8
	if poolCfg.PingTimeout == 0 {
		// An idle connection that a partition left silent must not hold
		// up the one who takes it from the pool.
		poolCfg.PingTimeout = cfg.ReplicationTimeout
	}
	poolCfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		// A string that does not parse was said by pgconnect.LiveURL, which
		// returns the last one that did: this one parses, but for a
		// race with a file changed in between, when cc stays as it was.
		if fresh, err := parsePoolConfig(cfg, cfg.postgresURL()); err == nil {
			*cc = *fresh.ConnConfig
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, pgerr.Connect(&poolCfg.ConnConfig.Config, err, "")
	}
	for _, m := range cfg.checkedMigrations() {
		if err := migrations.Check(ctx, pool, m); err != nil {
			pool.Close()
			return nil, err
		}
	}
	if err := preflight.CheckMessageSources(ctx, pool, cfg.Messages); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// parsePoolConfig parses url into the pool's configuration, with the
// connection settings every connection of the relay's pool has.
func parsePoolConfig(cfg Config, url string) (*pgxpool.Config, error) {
	poolCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	keepalive.PostgreSQL(&poolCfg.ConnConfig.Config, cfg.ReplicationTimeout)
	// A checkpoint row or a status row the relay counts on must survive a
	// crash of the server, whatever the role's or database's default: a
	// lost checkpoint save would look like a gap in the slot.
	poolCfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	return poolCfg, nil
}

// retriedLogEvery is the most often one message of sayRetried is logged.
const retriedLogEvery = time.Minute

// sayRetried logs msg for err, a database error of work tried again at
// its next interval (the paused topics, the held keys): at debug when
// PostgreSQL went away (its outage lines say so); else at warn, each msg
// at most once per retriedLogEvery while it lasts, then a summary with
// how many failures more, and for a missing table with the command that
// creates it again (pgerr.MissingTableHint).
func (rn *runner) sayRetried(ctx context.Context, msg string, err error, args ...any) {
	args = append(args, "err", err)
	if pgerr.Level(err) < slog.LevelWarn {
		rn.log.Log(ctx, slog.LevelDebug, msg, args...)
		return
	}
	rn.retried.Log(msg, slog.LevelWarn, msg+pgerr.MissingTableHint(err), args...)
}

// checkedMigrations are what the start-up check (migrations.Check) checks:
// each outbox table with the relay's tables and the publication, or, for
// a relay of messages only, those without an outbox table.
func (c Config) checkedMigrations() []migrations.Config {
	ms := make([]migrations.Config, max(len(c.Tables), 1))
	for i := range ms {
		ms[i] = c.Migrations(i)
	}
	return ms
}

// serverShuttingDown reports whether PostgreSQL refuses new sessions
// because it is shutting down.
func (rn *runner) serverShuttingDown(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// An idle connection the shutdown closed fails for itself first; the
	// next one is new.
	for range 3 {
		_, err := rn.pool.Exec(ctx, "SELECT 1")
		switch {
		case err == nil:
			return false
		case pgerr.ShuttingDown(err), strings.Contains(err.Error(), "connection refused"):
			return true
		}
	}
	return false
}
