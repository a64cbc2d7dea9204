package relay

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/sink"
)

// Beside the stream, for the relay's whole life: how often PostgreSQL and
// Kafka are checked for readiness, and how often the slot and the status
// table are read for Status and the metrics.
const (
	reachInterval = 2 * time.Second
	reachTimeout  = 3 * time.Second
	statsInterval = 5 * time.Second
)

// watchHealth checks that PostgreSQL and Kafka answer every reachInterval,
// and reads the slot and the status table every statsInterval, until ctx
// ends. A broker that goes away makes the relay not ready within
// reachInterval+reachTimeout.
func (r *Relay) watchHealth(ctx context.Context, pool *pgxpool.Pool, snk *sink.Sink) {
	reach := time.NewTicker(reachInterval)
	defer reach.Stop()
	nextStats := time.Now()
	for {
		pgErr, kafkaErr := checkReach(ctx, pool, snk)
		if ctx.Err() != nil {
			return
		}
		r.state.reachable(pgErr, kafkaErr)
		if pgErr == "" && !time.Now().Before(nextStats) {
			nextStats = time.Now().Add(statsInterval)
			sctx, cancel := context.WithTimeout(ctx, reachTimeout)
			db, err := ReadDatabaseStats(sctx, pool, r.cfg)
			cancel()
			if err == nil {
				r.state.setDatabase(db)
			} else if ctx.Err() == nil {
				r.log.Debug("could not read the slot's and the status table's figures", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-reach.C:
		}
	}
}

// checkReach pings PostgreSQL and Kafka at once; an empty string means it
// answered.
func checkReach(ctx context.Context, pool *pgxpool.Pool, snk *sink.Sink) (pgErr, kafkaErr string) {
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	kafka := make(chan error, 1)
	go func() { kafka <- snk.Ping(ctx) }()
	if err := pool.Ping(ctx); err != nil {
		pgErr = err.Error()
	}
	if err := <-kafka; err != nil {
		kafkaErr = err.Error()
	}
	return pgErr, kafkaErr
}
