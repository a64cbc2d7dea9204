package recovery

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/republish"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// writtenFunc writes back the rows of source with ids as delivered.
type writtenFunc func(ctx context.Context, source string, ids []string) error

// openOutboxReaders opens a reader of each of cfg's tables for the rows
// written since since. The readers it opened are returned with an error
// too: close them all (closeAll).
func openOutboxReaders(ctx context.Context, cfg Config, since time.Time) ([]*republish.Window, error) {
	outs := make([]*republish.Window, 0, len(cfg.Tables))
	for i, m := range cfg.sources().Mappings() {
		r, err := republish.OpenWindow(ctx, cfg.url(), m, i, since, cfg.Logger)
		if err != nil {
			return outs, err
		}
		outs = append(outs, r)
	}
	return outs, nil
}

// closeAll closes readers.
func closeAll(readers []*republish.Window) {
	for _, r := range readers {
		r.Close()
	}
}

// checkWindows refuses a repair whose window on a table selects no row
// while the table holds rows written after the relay last saved its
// checkpoint (republish.Window.CheckGap).
func checkWindows(ctx context.Context, cfg Config, outs []*republish.Window) error {
	checkpoints := pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize()
	for _, r := range outs {
		if err := r.CheckGap(ctx, checkpoints, cfg.Slot); err != nil {
			return err
		}
	}
	return nil
}

// countRows counts the rows each reader would publish.
func countRows(ctx context.Context, outs []*republish.Window) (int, error) {
	rows := 0
	for _, out := range outs {
		n, err := out.Count(ctx)
		if err != nil {
			return rows, err
		}
		rows += n
	}
	return rows, nil
}

// publishAgain publishes the rows of outs with a producer of its own, and
// parks in failures those that cannot be delivered, counting both in res.
//
// written is told the ids of each batch of a table's rows that Kafka
// acknowledged, to write them back as delivered.
func publishAgain(ctx context.Context, cfg Config, failures *status.Store, written writtenFunc, outs []*republish.Window, commitLSN uint64, res *Result) error {
	kcfg := cfg.Kafka
	if kcfg.Logger == nil {
		kcfg.Logger = cfg.Logger
	}
	snk, err := sink.New(kcfg)
	if err != nil {
		return err
	}
	defer snk.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = snk.Ping(pingCtx)
	cancel()
	if sink.AuthFailed(err) {
		return fmt.Errorf("Kafka refuses the relay's connection: %w", err)
	}
	pub := republish.New(snk, republish.Options{Park: failures, CommitLSN: commitLSN, FlushAt: recoverBatch, LogFlushes: true, Logger: cfg.Logger})
	defer func() { c := pub.Counts(); res.Rows, res.Published, res.Parked = c.Rows, c.Published, c.Parked }()
	names := cfg.sources().TableNames()
	for i, out := range outs {
		if err := out.Publish(ctx, pub, func(ctx context.Context, ids []string) error { return written(ctx, names[i], ids) }); err != nil {
			return err
		}
	}
	return nil
}

// writeDelivered writes the rows of a table that writes back as
// delivered, one transaction per call.
func writeDelivered(pool *pgxpool.Pool, rows *writeback.Rows) writtenFunc {
	return func(ctx context.Context, source string, ids []string) error {
		if !rows.Writes(source) {
			return nil
		}
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, id := range ids {
				if err := rows.Write(ctx, tx, source, id, outboxrow.Outcome{State: outboxrow.Delivered, Attempts: -1, Attempted: true}); err != nil {
					return err
				}
			}
			return nil
		})
	}
}
