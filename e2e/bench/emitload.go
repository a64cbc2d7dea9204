package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The statements of the emit part's ways of writing an event: the same
// event each time (topic outbox.event.order, key $1, the default
// mapping's three headers, a ~260-byte JSON payload with the sequence
// number $2), one per transaction.
const (
	insertEvent = `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('order', $1, 'OrderPlaced', jsonb_build_object('seq', $2::int, 'pad', repeat('x', 240)))`
	emitMessageEvent = `SELECT pg_logical_emit_message(true, 'outbox', jsonb_build_object(
		'topic', 'outbox.event.order', 'key', $1::text,
		'headers', jsonb_build_object('event_type', 'OrderPlaced', 'aggregate_type', 'order', 'aggregate_id', $1::text),
		'payload', jsonb_build_object('seq', $2::int, 'pad', repeat('x', 240)))::text)`
	emitHelperEvent = `SELECT cdc_relay.emit('outbox.event.order', $1::text,
		jsonb_build_object('seq', $2::int, 'pad', repeat('x', 240)),
		jsonb_build_object('event_type', 'OrderPlaced', 'aggregate_type', 'order', 'aggregate_id', $1::text))`
	// The same two message ways with the headers as a parameter ($3, the
	// JSON text the client makes: headersParam), as an application that
	// passes its headers sends them (-emit-headers-param).
	emitMessageParamEvent = `SELECT pg_logical_emit_message(true, 'outbox', jsonb_build_object(
		'topic', 'outbox.event.order', 'key', $1::text,
		'headers', $3::jsonb,
		'payload', jsonb_build_object('seq', $2::int, 'pad', repeat('x', 240)))::text)`
	emitHelperParamEvent = `SELECT cdc_relay.emit('outbox.event.order', $1::text,
		jsonb_build_object('seq', $2::int, 'pad', repeat('x', 240)), $3::jsonb)`
)

// headersParam is the headers of key's event as the JSON text a client
// passes as a parameter: the same headers the other statements build.
func headersParam(key string) string {
	return `{"event_type": "OrderPlaced", "aggregate_type": "order", "aggregate_id": "` + key + `"}`
}

// emitLoad is what one way's load did: the events committed, in how long,
// the WAL it wrote and the CPU PostgreSQL spent on it.
type emitLoad struct {
	events   int
	elapsed  time.Duration
	walBytes int64
	pgCPU    time.Duration // the load's backends and PostgreSQL's background processes
	idle     float64       // the machine's idle time over the load, in cores
	// start and end are the WAL insert positions before and after it.
	start, end string
}

// runEmitLoad commits one-event transactions running sql from -emit-conns
// connections as fast as they go for -emit-duration. The WAL written is
// the insert position's advance over the run, so it includes whatever
// else PostgreSQL wrote meanwhile (autovacuum, checkpoints).
func (b *bench) runEmitLoad(ctx context.Context, sql string) (emitLoad, error) {
	var res emitLoad
	conns, err := b.loadConns(ctx, b.c.emitConns)
	defer closeConns(conns)
	if err != nil {
		return res, err
	}
	watch, err := b.watchCPU(ctx, 0)
	if err != nil {
		return res, err
	}
	res.start, err = b.walInsertLSN(ctx)
	if err != nil {
		return res, err
	}
	before, err := watch.sample()
	if err != nil {
		return res, err
	}
	start := time.Now()
	res.events, err = commitUntil(ctx, conns, sql, start.Add(b.c.emitDuration), b.c.keys)
	res.elapsed = time.Since(start)
	if err != nil {
		return res, err
	}
	after, err := watch.sample()
	if err != nil {
		return res, err
	}
	use := watch.use(before, after)
	res.pgCPU = time.Duration((use.group["backends"] + use.group["postgres"]) * float64(res.elapsed))
	res.idle = use.idle
	if res.end, err = b.walInsertLSN(ctx); err != nil {
		return res, err
	}
	res.walBytes, err = b.walDiff(ctx, res.end, res.start)
	return res, err
}

// loadConns opens n connections for a load; on an error it returns those
// it opened, for the caller to close.
func (b *bench) loadConns(ctx context.Context, n int) ([]*pgx.Conn, error) {
	var conns []*pgx.Conn
	for range n {
		c, err := pgx.Connect(ctx, b.url)
		if err != nil {
			return conns, fmt.Errorf("load connection: %w", err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeConns(conns []*pgx.Conn) {
	for _, c := range conns {
		c.Close(context.Background())
	}
}

// commitUntil runs sql, each in a transaction of its own, on every
// connection at once until deadline (closed loop: each connection's next
// statement starts when its last returns), and returns how many committed.
// Keys cycle through keys distinct values; the sequence numbers are
// distinct.
func commitUntil(ctx context.Context, conns []*pgx.Conn, sql string, deadline time.Time, keys int) (int, error) {
	var seq atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for _, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				i := seq.Add(1) - 1
				key := fmt.Sprintf("key-%d", i%int64(keys))
				args := []any{key, i}
				if strings.Contains(sql, "$3") {
					args = append(args, headersParam(key))
				}
				if _, err := conn.Exec(ctx, sql, args...); err != nil {
					errs <- fmt.Errorf("load: %s: %w", firstLine(sql), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return 0, err
	}
	// Every number taken was committed: a worker takes one only before
	// its statement.
	return int(seq.Load()), ctx.Err()
}

// walInsertLSN is the server's WAL insert position.
func (b *bench) walInsertLSN(ctx context.Context) (string, error) {
	var lsn string
	if err := b.conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		return "", fmt.Errorf("read the WAL insert position: %w", err)
	}
	return lsn, nil
}

// walDiff is the bytes of WAL from start to end.
func (b *bench) walDiff(ctx context.Context, end, start string) (int64, error) {
	var n int64
	if err := b.conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint", end, start).Scan(&n); err != nil {
		return 0, fmt.Errorf("WAL between %s and %s: %w", start, end, err)
	}
	return n, nil
}

// tableCost is what the outbox table costs the database at one moment:
// its size with its indexes and TOAST (pg_total_relation_size), the heap's
// alone, and its live and dead tuples as the statistics count them; and
// the counters that say which writes those statistics include.
type tableCost struct {
	size, heap                 int64
	live, dead                 int64
	inserted, deleted, vacuums int64
}

// outboxCost reads the outbox table's cost once the statistics include
// every write ready says (the load's backends report theirs as they
// exit, a session's own writes within a second or so).
func (b *bench) outboxCost(ctx context.Context, ready func(tableCost) bool) (tableCost, error) {
	var c tableCost
	err := poll(ctx, 30*time.Second, func() (bool, error) {
		err := b.conn.QueryRow(ctx, `SELECT pg_total_relation_size(relid), pg_relation_size(relid),
				n_live_tup, n_dead_tup, n_tup_ins, n_tup_del, vacuum_count + autovacuum_count
			FROM pg_stat_user_tables WHERE relid = 'outbox'::regclass`).
			Scan(&c.size, &c.heap, &c.live, &c.dead, &c.inserted, &c.deleted, &c.vacuums)
		if err != nil {
			return false, fmt.Errorf("read the outbox table's size and statistics: %w", err)
		}
		return ready(c), nil
	})
	if err != nil {
		return c, fmt.Errorf("the outbox table's statistics (now %+v): %w", c, err)
	}
	return c, nil
}

// deleteDelivered deletes every outbox row as the relay's retention does
// once the rows are older than --retention: in batches of 10,000 chosen
// by created_at, each batch in a transaction of its own.
func (b *bench) deleteDelivered(ctx context.Context) error {
	return b.exec(ctx, `DO $$
		DECLARE
			cutoff timestamptz := clock_timestamp();
			n bigint;
		BEGIN
			LOOP
				DELETE FROM outbox WHERE ctid = ANY (ARRAY(
					SELECT ctid FROM outbox WHERE created_at < cutoff LIMIT 10000))
				  AND (created_at < cutoff) IS TRUE;
				GET DIAGNOSTICS n = ROW_COUNT;
				COMMIT;
				EXIT WHEN n = 0;
			END LOOP;
		END $$`)
}
