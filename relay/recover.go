package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/leader"
	"github.com/cdc-relay/cdc-relay/pubwatch"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/republish"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/slot"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// RecoverOptions configures [Recover].
type RecoverOptions struct {
	// Since is the oldest timestamp-column value published again. Zero
	// means the checkpoint's time minus Margin: the commit time saved with
	// its position, or, for a row without one, the time it was saved.
	Since time.Time
	// Margin reaches back before the checkpoint's time, for transactions
	// that wrote their rows before they committed. Default 10 minutes.
	Margin time.Duration
	// DryRun counts the rows without publishing them or changing anything.
	DryRun bool
	// RecreateSlot drops the slot, when it exists, and creates it again,
	// as for a slot lost: the rows since the checkpoint's time less Margin
	// (or Since) are published again. It is the way out for a slot that
	// cannot decode the WAL after the relay's checkpoint: a publication
	// dropped and created again, or renamed and renamed back, is missing
	// from the WAL written in between, which pgoutput reads it as of.
	RecreateSlot bool
}

// RecoverResult says what [Recover] found and did.
type RecoverResult struct {
	// Gap is the stretch of WAL the relay never read.
	Gap SlotGapError
	// Since is the oldest timestamp published again (a column without a
	// time zone is read 12 hours wider: see Recover).
	Since time.Time
	// From says what Since is, for the operator: --since, or the
	// checkpoint's time (its commit time, or when it was saved) less the
	// margin.
	From string
	// Rows is the number of outbox rows found since then; Published of
	// them reached Kafka, Parked went to the status table (rows that cannot
	// become records, or that Kafka refused for good).
	Rows, Published, Parked int
	// NoGap is true when the relay read every transaction (the slot is
	// not ahead of its checkpoint): with RecoverOptions.Since, Recover then
	// publishes again the rows written since, and leaves the checkpoint
	// alone.
	NoGap bool
	// Resume is the position the next `cdc-relay run` starts from, after a
	// gap.
	Resume pglogrepl.LSN
}

// ErrNothingToRecover is returned by [Recover] when the slot is not ahead
// of the relay's checkpoint: the relay read every transaction.
var ErrNothingToRecover = errors.New("nothing to recover: the replication slot is not ahead of the relay's checkpoint")

// recoverBatch is how many records Recover produces before it waits for
// their acknowledgements.
const recoverBatch = 1000

// Recover repairs a [SlotGapError]: the relay's slot was dropped, or
// re-created or advanced by another consumer, so the relay never read some
// of the WAL. With RecoverOptions.Since and no gap, it publishes again the
// rows written since then and changes nothing else: rows the stream never
// published (the outbox table left the publication) or parked without
// their record (a required column was missing). It takes the slot's leadership (no relay may run on the slot
// meanwhile), creates the slot if it is missing (so nothing committed from
// now on is lost), publishes again every outbox row whose timestamp column
// is at or after RecoverOptions.Since, and then moves the checkpoint row to
// the slot's position, so the next `cdc-relay run` resumes from there.
// Rows committed after the slot's position reach Kafka twice (once from
// here, once from the slot); consumers deduplicate on the id header, as for
// any at-least-once delivery. Rows already deleted from the outbox table
// (by retention, say) cannot be published again.
//
// A timestamp column without a time zone holds wall times in the zone of
// the session that wrote them, which the relay cannot know: its window is
// widened by 12 hours, so that it holds every row written since in any
// zone from UTC−12 to UTC+14 (see windowOn), and more rows are published
// twice.
func Recover(ctx context.Context, cfg Config, opts RecoverOptions) (res RecoverResult, err error) {
	cfg, opts = recoverDefaults(cfg, opts)
	if err := checkRecoverable(cfg); err != nil {
		return res, err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	lock, err := leadRecover(ctx, pool, cfg.Slot)
	if err != nil {
		return res, err
	}
	defer lock.Release()

	store := checkpoint.NewStore(pool, cfg.CheckpointSchema, cfg.CheckpointTable)
	if err := pubwatch.CheckExpectedColumns(ctx, pool, cfg.publicationWatch(store, cfg.Logger)); err != nil {
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
	res.Gap, res.NoGap = gap.SlotGapError, gap.none
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
		res.Rows, err = countRows(ctx, outs)
		return res, err
	}
	if res.Gap.Dropped && !res.NoGap {
		if res.Gap.SlotLSN, err = recreateSlot(ctx, pool, cfg, gap.lost); err != nil {
			return res, err
		}
	}
	cfg.Logger.Info("publishing outbox rows again", "since", res.Since, "gap_from", gap.Checkpoint.LSN, "gap_to", res.Gap.SlotLSN)
	rows, err := WriteBackRows(cfg)
	if err != nil {
		return res, err
	}
	failures := status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable, status.SourceTables(cfg.TableNames()...), status.WriteBack(rows))
	if err := publishAgain(ctx, cfg, failures, writeDelivered(pool, rows), outs, uint64(gap.Checkpoint.LSN), &res); err != nil {
		return res, err
	}
	if res.NoGap {
		// The checkpoint stays where it is; the publication as it is now
		// is what the next relay holds to.
		return res, pubwatch.RecordPublication(ctx, pool, cfg.publicationWatch(store, cfg.Logger))
	}
	// The rows since res.Since are in Kafka: a slot lost again before the
	// relay saves a position of its own is recovered from there.
	if err := store.ResetAt(ctx, cfg.Slot, checkpoint.Position{LSN: res.Gap.SlotLSN, CommitTime: res.Since}); err != nil {
		return res, err
	}
	res.Resume = res.Gap.SlotLSN
	return res, pubwatch.RecordPublication(ctx, pool, cfg.publicationWatch(store, cfg.Logger))
}

// recoverSince returns the oldest timestamp Recover publishes again, and
// what it is: opts.Since when set, else the checkpoint's time less the
// margin.
func recoverSince(cp checkpoint.Checkpoint, opts RecoverOptions) (time.Time, string) {
	if !opts.Since.IsZero() {
		return opts.Since, "--since"
	}
	at, what := checkpointTime(cp)
	return at.Add(-opts.Margin), fmt.Sprintf("%s, less the margin (%s)", what, opts.Margin)
}

// checkpointTime is a time no transaction after cp's position committed
// before, and what it is: the commit time of the last transaction before
// the position or, for a row without one, the time it was saved.
func checkpointTime(cp checkpoint.Checkpoint) (time.Time, string) {
	if !cp.CommitTime.IsZero() {
		return cp.CommitTime, "the commit time saved with the checkpoint's position"
	}
	return cp.UpdatedAt, "the time the checkpoint was saved (it has no commit time: saved when the slot was created, or by an earlier version)"
}

// recoverDefaults fills what Recover needs of cfg and opts and was left
// unset: a logger that discards, a 10-minute margin.
func recoverDefaults(cfg Config, opts RecoverOptions) (Config, RecoverOptions) {
	cfg = cfg.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Margin <= 0 {
		opts.Margin = 10 * time.Minute
	}
	return cfg, opts
}

// leadRecover takes slot's leadership for Recover, which no relay may hold
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

// openOutboxReaders opens a reader of each of cfg's tables for the rows
// written since since. The readers it opened are returned with an error
// too: close them all (closeAll).
func openOutboxReaders(ctx context.Context, cfg Config, since time.Time) ([]*republish.Window, error) {
	outs := make([]*republish.Window, 0, len(cfg.Tables))
	for i, m := range cfg.Mappings() {
		r, err := republish.OpenWindow(ctx, cfg.postgresURL(), m, i, since, cfg.Logger)
		if err != nil {
			return outs, fatalIfMarked(err)
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

// checkRecoverable checks what Recover needs of cfg before it connects:
// a valid mapping and slot name, and a timestamp column for every table.
func checkRecoverable(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := replication.ValidSlotName(cfg.Slot); err != nil {
		return fmt.Errorf("%w: choose another --slot", err)
	}
	for _, t := range cfg.Tables {
		if t.Mapping.TimestampColumn == "" {
			return fmt.Errorf("recover finds the rows to publish again by the timestamp column, and none is mapped for %s.%s: set --timestamp-column (timestamp in a config file)",
				t.Mapping.Schema, t.Mapping.Table)
		}
	}
	return nil
}

// gap is what findGap found: the stretch of WAL the relay never read, or
// none, and whether the slot was invalidated.
type gap struct {
	SlotGapError
	none bool // the relay read every transaction
	lost bool // the slot exists but was invalidated, and must be dropped
}

// findGap compares the relay's checkpoint row with the slot, as resume
// does: a slot ahead of a write-ahead row, or missing or invalidated
// while a row exists, is a gap.
func findGap(ctx context.Context, pool *pgxpool.Pool, store *checkpoint.Store, slotName string) (gap, error) {
	cp, haveStored, err := store.Load(ctx, slotName)
	if err != nil {
		return gap{}, err
	}
	g := gap{SlotGapError: SlotGapError{Slot: slotName, Checkpoint: cp}}
	slot, err := replication.LookupSlot(ctx, pool, slotName)
	switch {
	case errors.Is(err, replication.ErrSlotNotFound):
		g.Dropped = true
		g.none = !haveStored
	case err != nil:
		return g, err
	case slot.Lost && haveStored:
		// Invalidated (max_slot_wal_keep_size): as good as dropped.
		g.Dropped, g.lost = true, true
	default:
		if err := slot.Usable(); err != nil {
			return g, err
		}
		g.SlotLSN = slot.ConfirmedFlush
		// As in resume: a row of an earlier version proves nothing.
		g.none = !haveStored || !cp.WriteAhead || slot.ConfirmedFlush <= cp.LSN
	}
	return g, nil
}

// slotToRecreate makes g, an existing slot's, the gap of a slot to drop
// and create again (RecoverOptions.RecreateSlot), from the relay's
// checkpoint; a slot missing already is created again as for any loss.
// Without a checkpoint there is no position to publish again from.
func slotToRecreate(g gap) (gap, error) {
	if g.Checkpoint.LSN == 0 {
		return g, fatalError{fmt.Errorf("--recreate-slot: the relay has no checkpoint for slot %q, so no time to publish the outbox rows again from: "+
			"drop the slot yourself (SELECT pg_drop_replication_slot('%s')), then run cdc-relay recover --since TIME", g.Slot, g.Slot)}
	}
	if !g.Dropped {
		g.Dropped, g.lost, g.none, g.SlotLSN = true, true, false, 0
	}
	return g, nil
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

// recreateSlot creates the relay's slot again, dropping it first if it
// was invalidated (or RecoverOptions.RecreateSlot), before any row is read: whatever commits from now on is
// kept. It returns the new slot's position. A new slot is a new stream:
// the checkpoint row takes a new stream id first, so that no crash leaves
// the new slot with the id of the old (see recordStart).
func recreateSlot(ctx context.Context, pool *pgxpool.Pool, cfg Config, lost bool) (pglogrepl.LSN, error) {
	if err := checkpoint.NewStore(pool, cfg.CheckpointSchema, cfg.CheckpointTable).SetStream(ctx, cfg.Slot, checkpoint.NewStreamID()); err != nil {
		return 0, err
	}
	if lost {
		if _, err := pool.Exec(ctx, "SELECT pg_drop_replication_slot($1)", cfg.Slot); err != nil {
			return 0, fmt.Errorf("drop replication slot %q (invalidated, or --recreate-slot) to create it again: %w", cfg.Slot, err)
		}
		cfg.Logger.Info("dropped the replication slot, to create it again", "slot", cfg.Slot)
	}
	repl, err := replication.Connect(ctx, cfg.PostgresURL, "cdc-relay recover", cfg.ReplicationTimeout)
	if err != nil {
		return 0, err
	}
	stopWatch := slot.WatchCreation(ctx, cfg.PostgresURL, cfg.Slot, cfg.Logger)
	at, err := repl.CreateSlot(ctx, cfg.Slot)
	stopWatch()
	_ = repl.Close(context.Background())
	if err != nil {
		return 0, err
	}
	cfg.Logger.Info("replication slot created", "slot", cfg.Slot, "at", at.ConsistentPoint)
	return at.ConsistentPoint, nil
}

// publishAgain publishes the rows of outs with a producer of its own, and
// parks in failures those that cannot be delivered, counting both in res.
//
// written is told the ids of each batch of a table's rows that Kafka
// acknowledged, to write them back as delivered.
func publishAgain(ctx context.Context, cfg Config, failures *status.Store, written writtenFunc, outs []*republish.Window, commitLSN uint64, res *RecoverResult) error {
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
	names := cfg.TableNames()
	for i, out := range outs {
		if err := out.Publish(ctx, pub, func(ctx context.Context, ids []string) error { return written(ctx, names[i], ids) }); err != nil {
			return fatalIfMarked(err)
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
				if err := rows.Write(ctx, tx, source, id, outboxrow.Outcome{State: outboxrow.Delivered, Attempts: -1}); err != nil {
					return err
				}
			}
			return nil
		})
	}
}
