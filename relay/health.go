package relay

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/tick"
	"github.com/cdc-relay/cdc-relay/report"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Beside the stream, for the relay's whole life: how often PostgreSQL and
// Kafka are checked for readiness, and how often the slot and the status
// table are read for Status and the metrics.
const (
	reachInterval = 2 * time.Second
	reachTimeout  = 3 * time.Second
	statsInterval = 5 * time.Second
	// statsTimeout bounds a reading: the count of a large backlog's held
	// rows takes seconds (the next reading waits for it).
	statsTimeout = time.Minute
	// staleStats is the age from which the last reading is stale (the
	// readings fail): the oldest held event's age is no longer grown.
	staleStats = statsTimeout + 2*statsInterval
)

// watchHealth checks that PostgreSQL and Kafka answer every reachInterval,
// reads the slot and the status table every statsInterval, and adds a
// reading of the counters to the history every report.HistoryInterval,
// until ctx ends. A broker that goes away makes the relay not ready within
// reachInterval+reachTimeout. PostgreSQL is pinged on a connection of its
// own, so that a pool busy with the stream's work is not taken for a
// server that does not answer; the reading, which may be slow on a large
// status table, runs apart so that it never delays the checks.
func (r *Relay) watchHealth(ctx context.Context, pool *pgxpool.Pool, snk *sink.Sink) {
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		r.readStats(ctx, pool)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		tick.Every(ctx, report.HistoryInterval, func(context.Context) bool { r.sample(); return true }, tick.Now())
	}()
	defer func() { <-done; <-done }()

	var conn *pgx.Conn // the check's own; nil until connected
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	tick.Every(ctx, reachInterval, func(ctx context.Context) bool {
		cctx, cancel := context.WithTimeout(ctx, reachTimeout)
		kafka := make(chan error, 1)
		go func() { kafka <- snk.Ping(cctx) }()
		var pgErr, kafkaErr string
		err := pingPostgres(cctx, pool, &conn)
		if err != nil {
			pgErr = err.Error()
		}
		r.pgOutages.Pinged(ctx, err)
		if err := <-kafka; err != nil {
			kafkaErr = err.Error()
		}
		cancel()
		if ctx.Err() != nil {
			return false
		}
		r.state.reachable(pgErr, kafkaErr)
		return true
	}, tick.Now())
}

// pingPostgres pings PostgreSQL on *conn, connecting it first (with the
// pool's settings) if it is nil, and dropping it after an error so that the
// next check connects anew.
func pingPostgres(ctx context.Context, pool *pgxpool.Pool, conn **pgx.Conn) error {
	if *conn == nil {
		pc := pool.Config()
		cc := pc.ConnConfig.Copy()
		if pc.BeforeConnect != nil { // the connection string read again
			if err := pc.BeforeConnect(ctx, cc); err != nil {
				return err
			}
		}
		c, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			return err
		}
		*conn = c
	}
	if err := (*conn).Ping(ctx); err != nil {
		_ = (*conn).Close(context.Background())
		*conn = nil
		return err
	}
	return nil
}

// readStats reads the slot and the status table every statsInterval until
// ctx ends.
func (r *Relay) readStats(ctx context.Context, pool *pgxpool.Pool) {
	var last report.DatabaseStats // the previous reading that counted the held rows, for report.WarnTruncated
	reader := report.NewStatsReader(r.cfg.ReportNames())
	tick.Every(ctx, statsInterval, func(ctx context.Context) bool {
		sctx, cancel := context.WithTimeout(ctx, statsTimeout)
		db, err := reader.Read(sctx, pool)
		cancel()
		switch {
		case ctx.Err() != nil:
			return false
		case err == nil:
			r.state.setDatabase(db)
			r.warnBackfills(db.BackfillsProblem)
			if !db.HeldAt.Equal(last.HeldAt) {
				if r.state.getRole() == report.RoleLeader {
					report.WarnTruncated(r.log, r.cfg.ReportNames(), recoverMargin, last, db)
				}
				last = db
			}
		default:
			r.log.Debug("could not read the slot's and the status table's figures", "err", err)
		}
		return true
	}, tick.Now())
}

// sample adds a reading of the relay's counters to its history.
func (r *Relay) sample() {
	secs, acked := r.metrics.CommitToAckTotals()
	r.history.Add(report.Sample{At: time.Now(), Produced: uint64(r.count.Events.Load()), AckSeconds: secs, Acked: acked})
}

// History is what the relay did over its last hour, or since it started
// when that is less, as intervals of report.HistoryInterval, oldest
// first: its rate and its commit-to-ack time, from its counters read
// while it runs (see report.History). Kept in memory only.
func (r *Relay) History() []report.Point { return report.Points(r.history.Samples()) }

// warnBackfills logs, once, why the running backfills cannot be read.
func (r *Relay) warnBackfills(problem string) {
	if problem != "" && r.state.backfillsWarned.CompareAndSwap(false, true) {
		r.log.Warn(problem)
	}
}

// startHealth runs watchHealth beside the stream until the returned stop
// is called, which waits for it to end.
func (r *Relay) startHealth(ctx context.Context, pool *pgxpool.Pool, snk *sink.Sink) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.watchHealth(ctx, pool, snk)
	}()
	return func() {
		cancel()
		<-done
	}
}
