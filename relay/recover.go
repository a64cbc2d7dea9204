package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// RecoverOptions configures [Recover].
type RecoverOptions struct {
	// Since is the oldest timestamp-column value published again. Zero
	// means the checkpoint's time minus Margin.
	Since time.Time
	// Margin reaches back before the checkpoint's time, for transactions
	// that wrote their rows before it and committed after. Default 10
	// minutes.
	Margin time.Duration
	// DryRun counts the rows without publishing them or changing anything.
	DryRun bool
}

// RecoverResult says what [Recover] found and did.
type RecoverResult struct {
	// Gap is the stretch of WAL the relay never read.
	Gap SlotGapError
	// Since is the oldest timestamp published again.
	Since time.Time
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
func Recover(ctx context.Context, cfg Config, opts RecoverOptions) (RecoverResult, error) {
	cfg = cfg.withDefaults()
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Margin <= 0 {
		opts.Margin = 10 * time.Minute
	}
	var res RecoverResult
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	if err := replication.ValidSlotName(cfg.Slot); err != nil {
		return res, fmt.Errorf("%w: choose another --slot", err)
	}
	for _, t := range cfg.Tables {
		if t.Mapping.TimestampColumn == "" {
			return res, fmt.Errorf("recover finds the rows to publish again by the timestamp column, and none is mapped for %s.%s: set --timestamp-column (timestamp in a config file)",
				t.Mapping.Schema, t.Mapping.Table)
		}
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	lock, err := tryLead(ctx, pool, cfg.Slot)
	if err != nil {
		return res, err
	}
	if lock == nil {
		return res, fmt.Errorf("a relay is running on slot %q, or PostgreSQL still keeps the session of one that died (until --replication-timeout): "+
			"stop every relay on the slot, then try again", cfg.Slot)
	}
	defer lock.release()

	store := checkpoint.NewStore(pool, cfg.CheckpointSchema, cfg.CheckpointTable)
	cp, haveStored, err := store.Load(ctx, cfg.Slot)
	if err != nil {
		return res, err
	}
	res.Gap = SlotGapError{Slot: cfg.Slot, Checkpoint: cp}
	slot, err := replication.LookupSlot(ctx, pool, cfg.Slot)
	switch {
	case errors.Is(err, replication.ErrSlotNotFound):
		res.Gap.Dropped = true
		res.NoGap = !haveStored
	case err != nil:
		return res, err
	case slot.Lost && haveStored:
		// Invalidated (max_slot_wal_keep_size): as good as dropped.
		res.Gap.Dropped = true
	default:
		if err := slot.Usable(); err != nil {
			return res, err
		}
		res.Gap.SlotLSN = slot.ConfirmedFlush
		// As in resume: a row of an earlier version proves nothing.
		res.NoGap = !haveStored || !cp.WriteAhead || slot.ConfirmedFlush <= cp.LSN
	}
	res.Since = opts.Since
	switch {
	case res.NoGap && res.Since.IsZero():
		return res, ErrNothingToRecover
	case res.Since.IsZero():
		res.Since = cp.UpdatedAt.Add(-opts.Margin)
	}

	outs := make([]*outboxReader, len(cfg.Tables))
	for i := range cfg.Tables {
		if outs[i], err = newOutboxReader(ctx, cfg, i, res.Since); err != nil {
			return res, err
		}
		defer outs[i].close()
	}
	if opts.DryRun {
		for _, out := range outs {
			n, err := out.count(ctx)
			if err != nil {
				return res, err
			}
			res.Rows += n
		}
		return res, nil
	}
	if res.Gap.Dropped && !res.NoGap {
		if slot.Lost {
			if _, err := pool.Exec(ctx, "SELECT pg_drop_replication_slot($1)", cfg.Slot); err != nil {
				return res, fmt.Errorf("drop the invalidated replication slot %q: %w", cfg.Slot, err)
			}
			log.Info("dropped the invalidated replication slot", "slot", cfg.Slot)
		}
		// Before reading the rows: whatever commits from now on is kept.
		repl, err := replication.Connect(ctx, cfg.PostgresURL, "cdc-relay recover", cfg.ReplicationTimeout)
		if err != nil {
			return res, err
		}
		res.Gap.SlotLSN, err = repl.CreateSlot(ctx, cfg.Slot)
		_ = repl.Close(context.Background())
		if err != nil {
			return res, err
		}
		log.Info("replication slot created", "slot", cfg.Slot, "at", res.Gap.SlotLSN)
	}
	log.Info("publishing outbox rows again", "since", res.Since, "gap_from", cp.LSN, "gap_to", res.Gap.SlotLSN)

	kcfg := cfg.Kafka
	if kcfg.Logger == nil {
		kcfg.Logger = log
	}
	snk, err := sink.New(kcfg)
	if err != nil {
		return res, err
	}
	defer snk.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = snk.Ping(pingCtx)
	cancel()
	if sink.AuthFailed(err) {
		return res, fmt.Errorf("Kafka refuses the relay's connection: %w", err)
	}
	failures := status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable)
	for _, out := range outs {
		if err := out.publish(ctx, snk, failures, uint64(cp.LSN), &res, log); err != nil {
			return res, err
		}
	}
	if res.NoGap {
		return res, nil // the checkpoint stays where it is
	}
	if err := store.Reset(ctx, cfg.Slot, res.Gap.SlotLSN); err != nil {
		return res, err
	}
	res.Resume = res.Gap.SlotLSN
	return res, nil
}

// outboxReader reads the mapped outbox table's rows by the timestamp
// column, in the text format the decoder reads (TimeZone=UTC,
// DateStyle=ISO, bytea_output=hex).
type outboxReader struct {
	conn  *pgconn.PgConn
	table string // quoted
	where string // the condition on the timestamp column, with $1
	since []byte // $1
	order string
	dec   *decoder.Decoder
}

func newOutboxReader(ctx context.Context, cfg Config, table int, since time.Time) (*outboxReader, error) {
	pgCfg, err := pgconn.ParseConfig(cfg.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	pgCfg.RuntimeParams["TimeZone"] = "UTC"
	pgCfg.RuntimeParams["DateStyle"] = "ISO"
	pgCfg.RuntimeParams["bytea_output"] = "hex"
	conn, err := pgconn.ConnectConfig(ctx, pgCfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	m := cfg.Tables[table].Mapping
	dec, err := decoder.New(m)
	if err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	r := &outboxReader{conn: conn, dec: dec, table: pgx.Identifier{m.Schema, m.Table}.Sanitize()}
	ts := pgx.Identifier{m.TimestampColumn}.Sanitize()
	var typ string
	rr := conn.ExecParams(ctx, "SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped",
		[][]byte{[]byte(r.table), []byte(m.TimestampColumn)}, nil, nil, nil)
	for rr.NextRow() {
		typ = string(rr.Values()[0])
	}
	if _, err := rr.Close(); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("look up timestamp column %q of %s: %w", m.TimestampColumn, r.table, err)
	}
	switch typ {
	case "timestamp with time zone", "timestamp without time zone":
		r.where, r.since = ts+" >= $1::timestamptz", []byte(since.UTC().Format(time.RFC3339Nano))
	case "bigint":
		r.where, r.since = ts+" >= $1::bigint", []byte(strconv.FormatInt(since.UnixMilli(), 10))
	case "":
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("outbox table %s has no column %q: set --timestamp-column to the column that says when a row was written", r.table, m.TimestampColumn)
	default:
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("timestamp column %q of %s has type %s; recover needs timestamptz, timestamp or bigint (epoch milliseconds)", m.TimestampColumn, r.table, typ)
	}
	r.order = ts
	if m.IDColumn != "" {
		r.order += ", " + pgx.Identifier{m.IDColumn}.Sanitize()
	}
	return r, nil
}

func (r *outboxReader) close() { _ = r.conn.Close(context.Background()) }

func (r *outboxReader) count(ctx context.Context) (int, error) {
	rr := r.conn.ExecParams(ctx, "SELECT count(*) FROM "+r.table+" WHERE "+r.where, [][]byte{r.since}, nil, nil, nil)
	n := 0
	for rr.NextRow() {
		n, _ = strconv.Atoi(string(rr.Values()[0]))
	}
	if _, err := rr.Close(); err != nil {
		return 0, fmt.Errorf("count outbox rows: %w", err)
	}
	return n, nil
}

// publish produces every row since r.since, recordBatch at a time, and
// parks what cannot be delivered. Parked rows carry commitLSN (the
// checkpoint), so a second recover does not park them twice.
func (r *outboxReader) publish(ctx context.Context, snk *sink.Sink, failures *status.Store, commitLSN uint64, res *RecoverResult, log *slog.Logger) error {
	rr := r.conn.ExecParams(ctx, "SELECT * FROM "+r.table+" WHERE "+r.where+" ORDER BY "+r.order,
		[][]byte{r.since}, nil, nil, nil)
	fields := rr.FieldDescriptions()
	names := make([]string, len(fields))
	types := make([]uint32, len(fields))
	for i, f := range fields {
		names[i], types[i] = f.Name, f.DataTypeOID
	}
	rows, err := r.dec.Rows(names, types)
	if err != nil {
		_, _ = rr.Close()
		return err
	}
	var events []decoder.Event
	var recs []*kgo.Record
	flush := func() error {
		errs := snk.ProduceWait(ctx, recs)
		for i, err := range errs {
			switch {
			case err == nil:
				res.Published++
			case sink.ProducerRefused(err):
				return fmt.Errorf("Kafka refuses the relay's producer: %w", err)
			case sink.Permanent(err):
				if err := failures.Failed(ctx, &events[i], err); err != nil {
					return fmt.Errorf("park event for topic %q: %w", events[i].Topic, err)
				}
				res.Parked++
			default:
				return fmt.Errorf("publish outbox row: %w", err)
			}
		}
		if len(recs) > 0 {
			log.Info("published again", "rows", res.Rows, "published", res.Published, "parked", res.Parked)
		}
		events, recs = events[:0], recs[:0]
		return nil
	}
	for rr.NextRow() {
		res.Rows++
		msg := rows.Decode(rr.Values(), commitLSN)
		ev := msg.Event
		ev.Headers = slices.Clone(ev.Headers)
		if msg.Poison != nil {
			if err := failures.Dead(ctx, &ev, msg.Poison); err != nil {
				_, _ = rr.Close()
				return fmt.Errorf("park event: %w", err)
			}
			res.Parked++
			continue
		}
		topics := []string{ev.Topic}
		if msg.Routed {
			topics = msg.Routes // one record per route; none when no route matched
		}
		for _, topic := range topics {
			ev.Topic = topic
			rec := &kgo.Record{}
			sink.Fill(rec, nil, &ev)
			events, recs = append(events, ev), append(recs, rec)
		}
		if len(recs) >= recoverBatch {
			if err := flush(); err != nil {
				_, _ = rr.Close()
				return err
			}
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("read outbox rows from %s: %w", r.table, err)
	}
	return flush()
}
