package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// emitWay is one way the application writes its events.
type emitWay struct {
	name  string // as the tables print it
	sql   string // one event; $1 is the key, $2 the sequence number
	table bool   // writes the outbox table; otherwise a logical decoding message
}

// emitResult is one way's run: the load, the outbox table's cost before
// and after it (and, for the table, after retention's delete and after
// VACUUM, with the WAL each wrote), and the relay's drain of the events.
type emitResult struct {
	way                      emitWay
	load                     emitLoad
	before, afterRun         tableCost
	afterDelete, afterVacuum tableCost
	deleteWAL, vacuumWAL     int64
	walKinds                 walKinds     // the load's WAL by kind; nil without pg_walinspect
	drain                    *drainResult // nil: the relay cannot relay messages
	relaySkipped             string       // why drain is nil
}

// emitPrefix is the prefix the emit part's messages carry and the relay
// is told to relay.
const emitPrefix = "outbox"

// emit compares the outbox table with logical decoding messages, on the
// database's side (the application's transactions/s, WAL per event, what
// the table costs until it is vacuumed) and on the relay's (the drain of
// what the load wrote). Each way runs with a slot of the relay's present
// from before the load, as in production; the relay starts on that slot
// when the load is over.
func (b *bench) emit(ctx context.Context, out io.Writer) error {
	if b.c.emitDurable {
		restore, err := b.durable(ctx)
		if err != nil {
			return err
		}
		defer restore()
	}
	settings, err := b.emitSettings(ctx)
	if err != nil {
		return err
	}
	// Empty, as migrate made it, whatever the parts before left in it.
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return err
	}
	ways := b.emitWays(ctx)
	relayArgs, skipped := b.messageRelayArgs()
	load := loadAverage()
	runs, err := b.emitRounds(ctx, ways, relayArgs, skipped)
	if err != nil {
		return err
	}
	printEmit(out, emitHeader{settings: settings, load: load, conns: b.c.emitConns, duration: b.c.emitDuration,
		keys: b.c.keys, rounds: b.c.emitRounds, relayArgs: relayArgs}, runs)
	return nil
}

// emitRounds runs every way -emit-rounds times, the ways' order rotating
// from round to round, and returns each way's runs (runs[i] are ways[i]'s).
func (b *bench) emitRounds(ctx context.Context, ways []emitWay, relayArgs []string, skipped string) ([][]emitResult, error) {
	runs := make([][]emitResult, len(ways))
	for round := range b.c.emitRounds {
		for k := range ways {
			i := (k + round) % len(ways)
			w := ways[i]
			r, err := b.emitRun(ctx, round*len(ways)+i, w, relayArgs, skipped)
			if err != nil {
				return nil, fmt.Errorf("emit, %s: %w", w.name, err)
			}
			logf("emit, round %d, %s: %d events in %s (%.0f/s), %.0f WAL bytes/event, table +%s, drain %s", round+1, w.name,
				r.load.events, r.load.elapsed.Round(time.Millisecond), rate(r.load.events, r.load.elapsed),
				perEventBytes(r.load.walBytes, r.load.events), size(r.afterRun.size-r.before.size), drainLine(r))
			runs[i] = append(runs[i], r)
		}
	}
	return runs, nil
}

// emitWays are the ways the part compares: an INSERT into the default
// outbox table, pg_logical_emit_message with the envelope, and the SQL
// helper cdc_relay.emit when `migrate --message-prefix` creates it.
func (b *bench) emitWays(ctx context.Context) []emitWay {
	message, helperSQL, headers := emitMessageEvent, emitHelperEvent, "headers"
	if b.c.emitHeadersParam {
		message, helperSQL, headers = emitMessageParamEvent, emitHelperParamEvent, "headers as a parameter"
	}
	ways := []emitWay{
		{name: "INSERT INTO outbox", sql: insertEvent, table: true},
		{name: "pg_logical_emit_message(true, 'outbox', envelope)", sql: message},
	}
	if b.c.emitHeadersParam {
		ways[1].name = "pg_logical_emit_message(true, 'outbox', envelope with headers as a parameter)"
	}
	o, err := exec.CommandContext(ctx, b.relayBin, "migrate", "--postgres-url", b.url, "--no-slot", "--message-prefix", emitPrefix).CombinedOutput()
	var helper bool
	if err == nil {
		err = b.conn.QueryRow(ctx, "SELECT to_regprocedure('cdc_relay.emit(text, text, jsonb, jsonb, text)') IS NOT NULL").Scan(&helper)
	}
	if err != nil || !helper {
		logf("emit: no cdc_relay.emit helper (migrate --message-prefix: %v %s); its way is left out", err, firstLine(string(o)))
		return ways
	}
	return append(ways, emitWay{name: "cdc_relay.emit(topic, key, payload, " + headers + ")", sql: helperSQL})
}

// messageRelayArgs are the arguments that make the relay relay the
// messages too, given to it for every way so that its configuration is
// the same; none, with the reason, when this relay has no
// --message-prefix.
func (b *bench) messageRelayArgs() (args []string, skipped string) {
	help, _ := exec.Command(b.relayBin, "run", "-h").CombinedOutput()
	if !strings.Contains(string(help), "-message-prefix") {
		return nil, "this relay has no --message-prefix"
	}
	return []string{"--message-prefix", emitPrefix}, ""
}

// emitRun runs one way: its load behind a fresh slot, the table's cost,
// the relay's drain and, for the table, retention's delete and VACUUM.
func (b *bench) emitRun(ctx context.Context, i int, w emitWay, relayArgs []string, skipped string) (r emitResult, err error) {
	r.way = w
	slot := fmt.Sprintf("bench_emit_%d", i)
	if err = b.exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot); err != nil {
		return r, err
	}
	defer func() {
		b.dropSlot(ctx, slot)
		_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	}()
	// Each way starts just after a checkpoint: the same full-page writes
	// ahead of it when full_page_writes is on.
	if err = b.exec(ctx, "CHECKPOINT"); err != nil {
		return r, err
	}
	if r.before, err = b.outboxCost(ctx, func(tableCost) bool { return true }); err != nil {
		return r, err
	}
	if r.load, err = b.runEmitLoad(ctx, w.sql); err != nil {
		return r, err
	}
	r.walKinds = b.walByKind(ctx, r.load.start, r.load.end)
	want := r.before.inserted
	if w.table {
		want += int64(r.load.events)
	}
	if r.afterRun, err = b.outboxCost(ctx, func(c tableCost) bool { return c.inserted >= want }); err != nil {
		return r, err
	}
	if err = b.emitDrain(ctx, &r, slot, relayArgs, skipped); err != nil {
		return r, err
	}
	if w.table {
		err = b.cleanOutbox(ctx, &r)
	}
	return r, err
}

// emitDrain starts the relay on slot once the load is over and times it
// until Kafka acked every event the load wrote, as the drain part does;
// a message way is skipped when the relay cannot relay messages.
func (b *bench) emitDrain(ctx context.Context, r *emitResult, slot string, relayArgs []string, skipped string) error {
	if !r.way.table && skipped != "" {
		r.relaySkipped = skipped
		return nil
	}
	broker, err := newBroker(true)
	if err != nil {
		return err
	}
	defer broker.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, benchTopic); err != nil {
		return err
	}
	start := time.Now()
	p, err := b.startRelay(slot, broker.ListenAddrs(), relayArgs...)
	if err != nil {
		return err
	}
	if err := waitAcked(ctx, cl, benchTopic, int64(r.load.events), p, 10*time.Minute); err != nil {
		p.Kill()
		return err
	}
	d := drainResult{wall: time.Since(start)}
	if d.cpu, err = p.CPU(); err == nil {
		d.peakRSS, err = p.PeakRSS()
	}
	if err != nil {
		p.Kill()
		return err
	}
	r.drain = &d
	return p.Stop(60 * time.Second)
}

// cleanOutbox deletes the delivered rows as retention does, then runs
// VACUUM, and reads the table's cost and the WAL written after each.
func (b *bench) cleanOutbox(ctx context.Context, r *emitResult) error {
	start, err := b.walInsertLSN(ctx)
	if err != nil {
		return err
	}
	if err := b.deleteDelivered(ctx); err != nil {
		return err
	}
	deleted := r.afterRun.deleted + int64(r.load.events)
	if r.afterDelete, err = b.outboxCost(ctx, func(c tableCost) bool { return c.deleted >= deleted }); err != nil {
		return err
	}
	mid, err := b.walInsertLSN(ctx)
	if err != nil {
		return err
	}
	if err := b.exec(ctx, "VACUUM outbox"); err != nil {
		return err
	}
	if r.afterVacuum, err = b.outboxCost(ctx, func(c tableCost) bool { return c.vacuums > r.afterDelete.vacuums }); err != nil {
		return err
	}
	end, err := b.walInsertLSN(ctx)
	if err != nil {
		return err
	}
	if r.deleteWAL, err = b.walDiff(ctx, mid, start); err != nil {
		return err
	}
	r.vacuumWAL, err = b.walDiff(ctx, end, mid)
	return err
}

// emitSettings are the server's settings that decide what a commit costs,
// as one line.
func (b *bench) emitSettings(ctx context.Context) (string, error) {
	var s string
	err := b.conn.QueryRow(ctx, `SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY ord)
		FROM unnest(ARRAY['server_version', 'wal_level', 'synchronous_commit', 'fsync', 'full_page_writes',
			'shared_buffers', 'max_wal_size', 'checkpoint_timeout', 'autovacuum']) WITH ORDINALITY AS s(name, ord)`).Scan(&s)
	if err != nil {
		return "", fmt.Errorf("read the server's settings: %w", err)
	}
	return s, nil
}

// durable turns fsync and full_page_writes on, as a production server
// has them (the bench's cluster has them off), until restore.
func (b *bench) durable(ctx context.Context) (restore func(), err error) {
	reset := func() {
		for _, sql := range []string{"ALTER SYSTEM RESET fsync", "ALTER SYSTEM RESET full_page_writes", "SELECT pg_reload_conf()"} {
			if err := b.exec(ctx, sql); err != nil {
				logf("emit: turn fsync and full_page_writes off again: %v", err)
			}
		}
	}
	for _, sql := range []string{"ALTER SYSTEM SET fsync = on", "ALTER SYSTEM SET full_page_writes = on", "SELECT pg_reload_conf()"} {
		if err := b.exec(ctx, sql); err != nil {
			reset()
			return nil, fmt.Errorf("-emit-durable: %w", err)
		}
	}
	err = poll(ctx, 10*time.Second, func() (bool, error) {
		var on bool
		err := b.conn.QueryRow(ctx, "SELECT current_setting('fsync') = 'on' AND current_setting('full_page_writes') = 'on'").Scan(&on)
		return on, err
	})
	if err != nil {
		reset()
		return nil, fmt.Errorf("-emit-durable: the reload did not apply: %w", err)
	}
	return reset, nil
}
