package recovery

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/leader"
	"github.com/cdc-relay/cdc-relay/pubwatch"
	"github.com/cdc-relay/cdc-relay/status"
)

// recoverBatch is how many records Run produces before it waits for
// their acknowledgements.
const recoverBatch = 1000

// Run repairs a [slot.GapError]: the relay's slot was dropped, or
// re-created or advanced by another consumer, so the relay never read some
// of the WAL. With Options.Since and no gap, it publishes again the
// rows written since then and changes nothing else: rows the stream never
// published (the outbox table left the publication) or parked without
// their record (a required column was missing). It takes the slot's leadership (no relay may run on the slot
// meanwhile), creates the slot if it is missing (so nothing committed from
// now on is lost), publishes again every outbox row whose timestamp column
// is at or after Options.Since, and then moves the checkpoint row to
// the slot's position, so the next `cdc-relay run` resumes from there.
// Rows committed after the slot's position reach Kafka twice (once from
// here, once from the slot); consumers deduplicate on the id header, as for
// any at-least-once delivery. Rows already deleted from the outbox table
// (by retention, say) cannot be published again.
//
// A timestamp column without a time zone holds wall times in the zone of
// the session that wrote them, which the relay cannot know: its window is
// widened by 12 hours, so that it holds every row written since in any
// zone from UTC−12 to UTC+14 (see republish.OpenWindow), and more rows are
// published twice.
//
// pool is the caller's, connected to the relay's database; Run does not
// close it.
func Run(ctx context.Context, pool *pgxpool.Pool, cfg Config, opts Options) (res Result, err error) {
	cfg, opts = withDefaults(cfg, opts)
	lock, err := leadRecover(ctx, pool, cfg.Slot)
	if err != nil {
		return res, err
	}
	defer lock.Release()

	store := checkpoint.NewStore(pool, cfg.CheckpointSchema, cfg.CheckpointTable)
	if err := pubwatch.CheckExpectedColumns(ctx, pool, cfg.publicationWatch(store)); err != nil {
		return res, err
	}
	gap, err := findGap(ctx, pool, store, cfg.Slot)
	if err != nil {
		return res, err
	}
	if opts.RecreateSlot {
		if gap, err = slotToRecreate(gap); err != nil {
			return res, err
		}
	}
	res.Gap, res.NoGap = gap.GapError, gap.none
	if res.NoGap && opts.Since.IsZero() {
		return res, ErrNothingToRecover
	}
	res.Since, res.From = recoverSince(gap.Checkpoint, opts)
	cfg.Logger.Info("recover publishes again the outbox rows written since", "since", res.Since, "from", res.From)
	outs, err := openOutboxReaders(ctx, cfg, res.Since)
	defer closeAll(outs)
	if err != nil {
		return res, err
	}
	if !res.NoGap {
		if err := checkWindows(ctx, cfg, outs); err != nil {
			return res, err
		}
	}
	if opts.DryRun {
		if res.Rows, err = countRows(ctx, outs); err != nil {
			return res, err
		}
		return res, adoptForPublishers(ctx, pool, cfg, outs, true, &res)
	}
	if res.Gap.Dropped && !res.NoGap {
		if res.Gap.SlotLSN, err = recreateSlot(ctx, pool, cfg, gap.lost); err != nil {
			return res, err
		}
	}
	cfg.Logger.Info("publishing outbox rows again", "since", res.Since, "gap_from", gap.Checkpoint.LSN, "gap_to", res.Gap.SlotLSN)
	rows, err := cfg.writeBackRows()
	if err != nil {
		return res, err
	}
	failures := status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable, status.SourceTables(cfg.sources().TableNames()...), status.WriteBack(rows))
	if err := publishAgain(ctx, cfg, failures, writeDelivered(pool, rows), outs, uint64(gap.Checkpoint.LSN), &res); err != nil {
		return res, err
	}
	if err := adoptForPublishers(ctx, pool, cfg, outs, false, &res); err != nil {
		return res, err
	}
	if res.NoGap {
		// The checkpoint stays where it is; the publication as it is now
		// is what the next relay holds to.
		return res, pubwatch.RecordPublication(ctx, pool, cfg.publicationWatch(store))
	}
	// The rows since res.Since are in Kafka: a slot lost again before the
	// relay saves a position of its own is recovered from there.
	if err := store.ResetAt(ctx, cfg.Slot, checkpoint.Position{LSN: res.Gap.SlotLSN, CommitTime: res.Since}); err != nil {
		return res, err
	}
	res.Resume = res.Gap.SlotLSN
	return res, pubwatch.RecordPublication(ctx, pool, cfg.publicationWatch(store))
}

// publicationWatch is cfg.Watch with the checkpoint store that keeps the
// publication marks, and cfg's logger.
func (c Config) publicationWatch(store *checkpoint.Store) pubwatch.Config {
	w := c.Watch
	w.Store, w.Log = store, c.Logger
	return w
}

// recoverSince returns the oldest timestamp Run publishes again, and
// what it is: opts.Since when set, else the checkpoint's time less the
// margin.
func recoverSince(cp checkpoint.Checkpoint, opts Options) (time.Time, string) {
	if !opts.Since.IsZero() {
		return opts.Since, "--since"
	}
	at, what := cp.Since()
	return at.Add(-opts.Margin), fmt.Sprintf("%s, less the margin (%s)", what, opts.Margin)
}

// withDefaults fills what Run needs of cfg and opts and was left unset:
// a logger that discards, a 10-minute margin.
func withDefaults(cfg Config, opts Options) (Config, Options) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Margin <= 0 {
		opts.Margin = 10 * time.Minute
	}
	return cfg, opts
}

// leadRecover takes slot's leadership for Run, which no relay may hold
// meanwhile, or says why not.
func leadRecover(ctx context.Context, pool *pgxpool.Pool, slot string) (*leader.Lock, error) {
	lock, err := leader.TryLead(ctx, pool, slot)
	if err != nil {
		return nil, err
	}
	if lock == nil {
		return nil, fmt.Errorf("a relay is running on slot %q, or PostgreSQL still keeps the session of one that died (until --replication-timeout): "+
			"stop every relay on the slot, then try again", slot)
	}
	return lock, nil
}
