package recovery

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/outbox"
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
		t := cfg.Tables[i]
		var sends func(string) bool
		if !slices.Equal(t.AllPublishers(), outbox.DefaultPublishers()) {
			sends = func(topic string) bool { return t.SendsTo(topic, outbox.KafkaPublisher) }
		}
		notKafkas := !slices.Contains(t.AllPublishers(), outbox.KafkaPublisher)
		if err := out.Publish(ctx, pub, func(ctx context.Context, ids []string) error { return written(ctx, names[i], ids) }, sends, notKafkas); err != nil {
			return err
		}
	}
	return nil
}

// adoptForPublishers parks, for each publisher beside Kafka (a webhook),
// the rows of outs' windows whose events go to it, as reload rows of its
// own (status.Store.Adopt: once per event and topic, none that it holds
// already), and counts them in res: its poller sends each as its row is
// then, once a relay runs, its keys held meanwhile. Recover publishes to
// Kafka itself; a webhook gets the gap's events so, at least once. With
// dryRun, it counts what it would park (status.Store.WouldAdopt) and
// parks none.
func adoptForPublishers(ctx context.Context, pool *pgxpool.Pool, cfg Config, outs []*republish.Window, dryRun bool, res *Result) error {
	names := cfg.sources().TableNames()
	for i, t := range cfg.Tables {
		for _, p := range t.AllPublishers() {
			if p == outbox.KafkaPublisher {
				continue
			}
			a := windowAdoptable(t, names[i], p, outs[i].Predicate())
			store := status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable, status.SourceTables(names...), status.Publisher(p))
			adopt, verb := store.Adopt, "park"
			if dryRun {
				adopt, verb = store.WouldAdopt, "count"
			}
			n, err := adopt(ctx, pool, a)
			if err != nil {
				return fmt.Errorf("%s the rows of %s for publisher %s: %w", verb, names[i], p, err)
			}
			if res.Adopted == nil {
				res.Adopted = map[string]int64{}
			}
			res.Adopted[p] += n
		}
	}
	return nil
}

// windowAdoptable is what adoptForPublishers parks of t (named source)
// for publisher: the rows where selects, of the routes whose events go
// to publisher (all of them without routes).
func windowAdoptable(t outbox.Table, source, publisher, where string) status.Adoptable {
	m := t.Mapping
	a := status.Adoptable{Schema: m.Schema, Name: m.Table, Source: source, IDColumn: m.IDColumn, TagsColumn: m.TagsColumn,
		KeyColumn: m.KeyColumn, TopicColumn: m.TopicColumn, TopicTemplate: m.TopicTemplate, TimestampColumn: m.TimestampColumn,
		Publisher: publisher, Where: where}
	for i, r := range m.Routes {
		if t.SendsTo(r.Topic, publisher) {
			a.Routes, a.RouteIndex = append(a.Routes, r), append(a.RouteIndex, i)
		}
	}
	return a
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
