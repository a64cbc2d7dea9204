package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// The takeover of a running Debezium connector's slot (issue 49): the
// connector stops, and the relay goes on from the slot's confirmed
// position, on the connector's own slot and publication.

// dbzDefaultPublication is the publication Debezium's PostgreSQL
// connector creates when publication.name is left out: FOR ALL TABLES,
// with publication.autocreate.mode's default, all_tables.
const dbzDefaultPublication = "dbz_publication"

// TestDebeziumSlotTakeover proves the takeover end to end. Debezium's
// connector (scripts/debezium-harness: the outbox event router,
// JsonConverter without schemas) creates its own slot and its default
// publication, FOR ALL TABLES, as a deployment's does, and streams an
// application's load: each transaction a customer and one to five outbox
// events of one aggregate. `cdc-relay migrate --config`, run then, leaves
// the slot and the publication as they are and records no checkpoint
// while the connector streams. The connector is stopped gracefully in the
// middle of the load (SIGTERM: its engine closes as Kafka Connect stops a
// task, committing its offsets and confirming its last position on the
// slot), and the relay, started on the connector's slot and publication,
// streams from exactly the slot's confirmed position. Once the load
// stopped and the relay confirmed it all:
//   - every committed row is in the union of the connector's records and
//     the relay's: none lost;
//   - the rows both sent are the connector's last ones, after its
//     confirmed position, and no earlier one: the rows of its last
//     record's transaction, which a graceful stop leaves unconfirmed
//     (Debezium confirms the end of the transaction before a record's);
//   - the relay's record of each of them is byte for byte the connector's
//     (topic, key, value, headers).
//
// The duplicates, the slot's positions and the time the takeover took are
// logged. Like TestDebeziumOutboxRouterBytes it needs Java 17 and Maven,
// and runs with CDC_RELAY_TEST_DEBEZIUM=1.
func TestDebeziumSlotTakeover(t *testing.T) {
	parallel(t)
	requireDebeziumHarness(t)
	e := newEnv(t)
	ctx := context.Background()

	// newEnv's outbox table and slot give way to the application's
	// table, the connector's slot and publication.
	e.dropOutbox()
	schema, err := os.ReadFile(filepath.Join("..", "examples", "debezium-outbox", "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.conn, string(schema)) // customers, purchase_orders, outboxevent
	slot := e.slot + "_dbz"             // slots are the cluster's: one of the test's own
	topicPrefix := e.prefix + ".outbox.event."

	// The relay's config: the connector's slot and publication, and its
	// converters (examples/debezium-outbox/relay.yaml's, JsonConverter
	// without schemas).
	path := filepath.Join(t.TempDir(), "relay.yaml")
	yaml := fmt.Sprintf(`slot: %s
publication: %s
tables:
  - table: public.outboxevent
    id: id
    key: aggregateid
    value: payload
    topic: %q
    headers: {eventType: type}
    key_converter: json
    value_converter: json
`, slot, dbzDefaultPublication, topicPrefix+"{aggregatetype}")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}

	// The connector, as deployed: it creates its slot and its publication
	// (publication.autocreate.mode all_tables, the default; base.properties
	// sets disabled for the other test) and snapshots the empty table
	// first (snapshot.mode initial, the default). It runs until stopped.
	t.Cleanup(func() { dropSlotWhenIdle(t, e, slot) }) // after the relay's and the connector's ends
	out := filepath.Join(t.TempDir(), "debezium.jsonl")
	connector := startHarnessProcess(t, out, harnessArgs(t, e, []string{"json-schemas-off"}, topicPrefix,
		"--max", "100000000", "--timeout", "600",
		"slot.name="+slot, "publication.name="+dbzDefaultPublication,
		"publication.autocreate.mode=all_tables", "snapshot.mode=initial",
		"table.include.list=public.outboxevent"))
	// Streaming, not creating the slot or taking its snapshot (between
	// them the slot is idle a moment).
	e.waitFor("the connector created its slot and publication and streams", 120*time.Second, func() bool {
		connector.requireRunning()
		var ready bool
		err := e.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid
				WHERE s.slot_name = $1 AND r.state = 'streaming')
			AND EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $2)`, slot, dbzDefaultPublication).Scan(&ready)
		if err != nil {
			t.Fatal(err)
		}
		return ready
	})
	var allTables bool
	if err := e.conn.QueryRow(ctx, "SELECT puballtables FROM pg_publication WHERE pubname = $1", dbzDefaultPublication).Scan(&allTables); err != nil || !allTables {
		t.Fatalf("the connector's publication %s: FOR ALL TABLES %v, %v; want the default, all tables", dbzDefaultPublication, allTables, err)
	}

	// migrate, while the connector streams: the relay's tables; the slot
	// and publication as they are, and no checkpoint (the connector
	// confirms positions past any recorded now).
	migrated, err := exec.Command(relayBin, "migrate", "--config", path, "--postgres-url", e.url).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate --config on the connector's slot and publication: %v\n%s", err, migrated)
	}
	if s := string(migrated); !strings.Contains(s, `replication slot "`+slot+`" exists and another consumer streams it`) ||
		strings.Contains(s, "created publication") || strings.Contains(s, "created replication slot") {
		t.Fatalf("migrate on the connector's slot and publication said:\n%s", migrated)
	}
	if n := e.count("SELECT count(*) FROM cdc_relay_checkpoint"); n != 0 {
		t.Fatalf("migrate recorded %d checkpoint rows for a slot the connector streams", n)
	}

	// The application's load, from before the connector's stop to after
	// the relay took over.
	ld := startOutboxEventLoad(t, e.url, 400)
	e.waitFor("the connector relays the load", 60*time.Second, func() bool {
		connector.requireRunning()
		return connector.lines() >= 1000
	})

	// The connector stops, as DELETE /connectors/NAME stops it.
	stopping := time.Now()
	connector.stop(60 * time.Second)
	stoppedAt := time.Now()
	slotAtStop := e.slotLSN(slot)
	dbz, dbzOrder := parseHarnessRecords(t, connector.stdout())
	t.Logf("the connector stopped after %d records in %s; the slot's confirmed position: %s",
		len(dbz), stoppedAt.Sub(stopping).Round(time.Millisecond), slotAtStop)

	// The relay, on the connector's slot and publication, the load going on.
	relay := e.spawnRelayArgs(relayBin, "run", "--config", path, "--postgres-url", e.url,
		"--kafka-brokers", strings.Join(e.brokers, ","), "--status-interval", "200ms", "--metrics-addr", "127.0.0.1:0")
	e.waitFor("the relay streams the connector's slot", 60*time.Second, func() bool {
		if !relay.Running() {
			t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		return strings.Contains(relay.Log(), "replication started")
	})
	tookOver := time.Since(stoppedAt)
	m := regexp.MustCompile(`msg="replication started".* from=(\S+)`).FindStringSubmatch(relay.Log())
	if m == nil {
		t.Fatalf("the relay's log does not say where it started:\n%s", relay.Log())
	}
	first, err := pglogrepl.ParseLSN(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if first != slotAtStop {
		t.Errorf("the relay started at %s, the slot's confirmed position when the connector stopped is %s", first, slotAtStop)
	}
	if !strings.Contains(relay.Log(), "resuming from the slot's confirmed position (no checkpoint row yet)") {
		t.Errorf("the relay's first run did not resume from the slot's confirmed position:\n%s", relay.Log())
	}

	// Some of the load through the relay, then the end of it.
	atTakeover := ld.committed()
	e.waitFor("the load goes on under the relay", 60*time.Second, func() bool { return ld.committed() >= atTakeover+600 })
	ids := ld.stop()
	end := e.lsn(insertLSN)
	e.waitFor("the relay confirms every row", 60*time.Second, func() bool { return e.slotLSN(slot) >= end })
	produced := relay.status().EventsProduced
	relay.stop(30 * time.Second)
	got, _ := readRelayRecords(t, e, topicPrefix, ids, int(produced), 60*time.Second)

	// None lost; the duplicates are the connector's last records, and the
	// same bytes.
	var lost, both []string
	for _, id := range ids {
		_, inDbz := dbz[id]
		_, inRelay := got[id]
		switch {
		case !inDbz && !inRelay:
			lost = append(lost, id)
		case inDbz && inRelay:
			both = append(both, id)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d committed rows are in neither the connector's records nor the relay's: %s", len(lost), len(ids), firstFew(lost))
	}
	// The relay started at the connector's last confirmation: it sent again
	// every record the connector printed after it (a suffix of its output),
	// and no earlier one.
	if suffix := dbzOrder[len(dbzOrder)-len(both):]; !slices.Equal(sorted(suffix), sorted(both)) {
		t.Errorf("the rows both sent (%d) are not the connector's last %d records: both %s; the connector's last %s",
			len(both), len(both), firstFew(both), firstFew(suffix))
	}
	// Debezium confirms, with a record's offset, the end of the
	// transaction before the record's (its lsn_commit): stopped gracefully,
	// it confirmed up to its last record's transaction, which the relay
	// sends again whole. Rows of an earlier transaction sent again would
	// mean the connector's last positions were not confirmed.
	if len(dbzOrder) > 0 {
		lastID := dbzOrder[len(dbzOrder)-1]
		if _, again := got[lastID]; !again {
			t.Errorf("the connector's last record, row %s, was not sent again: its transaction was confirmed", lastID)
		}
		last := ld.txOf(lastID)
		for _, id := range both {
			if tx := ld.txOf(id); tx != last {
				t.Errorf("row %s of transaction %d was sent again, and the connector's last record is of transaction %d: "+
					"its stop did not confirm its last positions", id, tx, last)
			}
		}
	}
	for _, id := range both {
		if diffs := recordDiffs(dbz[id], got[id]); len(diffs) > 0 {
			t.Errorf("row %s, sent by both: the relay's record is not the connector's:\n\t%s", id, strings.Join(diffs, "\n\t"))
		}
	}
	t.Logf("takeover: %d rows committed, %d by the connector, %d by the relay, %d by both (sent again: the connector's last records, "+
		"after its confirmed position): %s; the slot at the connector's stop %s, the relay's first position %s; "+
		"the relay streamed %s after the connector exited",
		len(ids), len(dbz), len(got), len(both), firstFew(both), slotAtStop, first, tookOver.Round(time.Millisecond))
}

// firstFew shows up to 5 of ids, and how many more there are.
func firstFew(ids []string) string {
	if len(ids) <= 5 {
		return "[" + strings.Join(ids, " ") + "]"
	}
	return fmt.Sprintf("[%s … and %d more]", strings.Join(ids[:5], " "), len(ids)-5)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// count runs a query of one count on the test's connection.
func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// slotLSN is slot's confirmed_flush_lsn.
func (e *env) slotLSN(slot string) pglogrepl.LSN {
	e.t.Helper()
	var text string
	if err := e.conn.QueryRow(context.Background(), "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&text); err != nil {
		e.t.Fatalf("the confirmed position of slot %s: %v", slot, err)
	}
	lsn, err := pglogrepl.ParseLSN(text)
	if err != nil {
		e.t.Fatal(err)
	}
	return lsn
}

// harnessProcess is the Debezium harness running in the background, its
// records going to a file.
type harnessProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	out    string // its stdout
	stderr *lockedBuffer
	done   chan struct{}
	err    error // set before done is closed
}

// startHarnessProcess starts the harness with args, its records going to
// the file out; it is killed when the test ends, if still running.
func startHarnessProcess(t *testing.T, out string, args []string) *harnessProcess {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	h := &harnessProcess{t: t, cmd: exec.Command(debeziumHarness, args...), out: out, stderr: &lockedBuffer{}, done: make(chan struct{})}
	h.cmd.Stdout, h.cmd.Stderr = f, h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.err = h.cmd.Wait()
		f.Close()
		close(h.done)
	}()
	t.Cleanup(func() {
		select {
		case <-h.done:
		default:
			_ = h.cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() {
			t.Logf("the Debezium harness's log:\n%s", h.stderr.String())
		}
	})
	return h
}

// requireRunning fails the test when the harness has exited.
func (h *harnessProcess) requireRunning() {
	h.t.Helper()
	select {
	case <-h.done:
		h.t.Fatalf("the Debezium harness exited: %v\n%s", h.err, h.stderr.String())
	default:
	}
}

// stdout is what the harness printed so far.
func (h *harnessProcess) stdout() []byte {
	h.t.Helper()
	b, err := os.ReadFile(h.out)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// lines is how many whole records the harness printed so far.
func (h *harnessProcess) lines() int { return strings.Count(string(h.stdout()), "\n") }

// stop sends SIGTERM, which closes the engine as Kafka Connect stops a
// task, and requires a clean exit within timeout.
func (h *harnessProcess) stop(timeout time.Duration) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-h.done:
	case <-time.After(timeout):
		h.t.Fatalf("the Debezium harness did not stop within %s of SIGTERM\n%s", timeout, h.stderr.String())
	}
	if h.err != nil {
		h.t.Fatalf("the Debezium harness stopped with %v\n%s", h.err, h.stderr.String())
	}
}

// lockedBuffer is a strings.Builder safe for a process's writes and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// outboxEventLoad commits an application's transactions from a goroutine
// of its own: each a customer and one to five events in outboxevent (the
// customer's, aggregatetype customer), at about rate events a second.
// Each event's id is known once its transaction committed.
type outboxEventLoad struct {
	stopc chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	ids   []string       // committed, in commit order
	tx    map[string]int // each id's transaction, numbered from 0
	err   error          // set before done is closed
	t     *testing.T
}

func startOutboxEventLoad(t *testing.T, url string, rate float64) *outboxEventLoad {
	l := &outboxEventLoad{stopc: make(chan struct{}), done: make(chan struct{}), tx: map[string]int{}, t: t}
	go func() {
		defer close(l.done)
		l.err = l.run(url, rate)
	}()
	t.Cleanup(func() {
		select {
		case <-l.stopc:
		default:
			close(l.stopc)
		}
		<-l.done
	})
	return l
}

func (l *outboxEventLoad) run(url string, rate float64) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	start := time.Now()
	for n, tx := 0, 0; ; tx++ {
		select {
		case <-l.stopc:
			return nil
		default:
		}
		rows := 1 + tx%5
		var ids []string
		batch := &pgx.Batch{}
		batch.Queue("INSERT INTO customers (name, email) VALUES ($1, $2)", fmt.Sprintf("Customer %d", tx), fmt.Sprintf("c%d@example.com", tx))
		for i := range rows {
			id := fmt.Sprintf("00000000-0000-4000-8000-%012d", n+i)
			ids = append(ids, id)
			batch.Queue(`INSERT INTO outboxevent (id, aggregatetype, aggregateid, type, payload) VALUES ($1, 'customer', $2, 'CustomerCreated', $3)`,
				id, fmt.Sprint(tx), fmt.Sprintf(`{"customer": %d, "event": %d, "name": "Customer %d ☕"}`, tx, n+i, tx))
		}
		if err := pgx.BeginFunc(ctx, conn, func(t pgx.Tx) error { return t.SendBatch(ctx, batch).Close() }); err != nil {
			return fmt.Errorf("the load's transaction %d: %w", tx, err)
		}
		n += rows
		l.mu.Lock()
		l.ids = append(l.ids, ids...)
		for _, id := range ids {
			l.tx[id] = tx
		}
		l.mu.Unlock()
		if wait := time.Until(start.Add(time.Duration(float64(n) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(wait) // the application's pace, not a synchronisation
		}
	}
}

// committed is how many events the load has committed so far; it fails
// the test when the load failed.
func (l *outboxEventLoad) committed() int {
	l.t.Helper()
	select {
	case <-l.done:
		if l.err != nil {
			l.t.Fatal(l.err)
		}
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// txOf is the number of the transaction that committed the event id; -1
// for none of the load's.
func (l *outboxEventLoad) txOf(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tx, ok := l.tx[id]; ok {
		return tx
	}
	return -1
}

// stop ends the load and returns the ids of the events it committed.
func (l *outboxEventLoad) stop() []string {
	l.t.Helper()
	close(l.stopc)
	<-l.done
	if l.err != nil {
		l.t.Fatal(l.err)
	}
	return slices.Clone(l.ids)
}

// TestSlotTakeoverRefusesASlotItCannotRead: the relay takes over only a
// pgoutput slot of the database it is given. A slot of another plugin (a
// Debezium connector's with decoderbufs, here test_decoding) and a
// pgoutput slot of another database are refused by migrate and by run,
// before either reads or changes anything, and the message says what to
// do: name another slot, which migrate creates (or connect to the slot's
// database). The slots are left as they were.
func TestSlotTakeoverRefusesASlotItCannotRead(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	ctx := context.Background()
	decoding, elsewhere := e.slot+"_decoding", e.slot+"_elsewhere"
	mustExec(t, e.conn, "SELECT pg_create_logical_replication_slot($1, 'test_decoding')", decoding)
	t.Cleanup(func() { dropSlotWhenIdle(t, e, decoding) })
	admin := mustConnect(t, cluster.URL("postgres"))
	defer admin.Close(ctx)
	mustExec(t, admin, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", elsewhere)
	t.Cleanup(func() { dropSlotWhenIdle(t, e, elsewhere) })
	positions := func() string {
		var s string
		if err := e.conn.QueryRow(ctx, `SELECT string_agg(slot_name || ' ' || confirmed_flush_lsn, ', ' ORDER BY slot_name)
			FROM pg_replication_slots WHERE slot_name IN ($1, $2)`, decoding, elsewhere).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := positions()

	for _, tc := range []struct {
		slot string
		want []string
	}{
		{decoding, []string{`replication slot "` + decoding + `" uses plugin "test_decoding"`, "needs pgoutput", "choose another --slot", "cdc-relay migrate"}},
		{elsewhere, []string{`replication slot "` + elsewhere + `" belongs to another database ("postgres"; the URL names "` + e.slot + `")`,
			`connect to "postgres"`, "choose another --slot"}},
	} {
		out, err := exec.Command(relayBin, "migrate", "--postgres-url", e.url, "--slot", tc.slot).CombinedOutput()
		if err == nil {
			t.Errorf("migrate --slot %s succeeded:\n%s", tc.slot, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("migrate --slot %s does not say %q:\n%s", tc.slot, w, out)
			}
		}

		p := e.spawnRelay("--slot", tc.slot)
		e.waitFor("the relay refuses slot "+tc.slot, 60*time.Second, func() bool { return !p.Running() })
		if p.Err() == nil {
			t.Errorf("run --slot %s exited cleanly:\n%s", tc.slot, p.Log())
		}
		for _, w := range tc.want {
			if !strings.Contains(p.Log(), w) {
				t.Errorf("run --slot %s does not say %q:\n%s", tc.slot, w, p.Log())
			}
		}
		if strings.Contains(p.Log(), "replication started") {
			t.Errorf("run --slot %s streamed it:\n%s", tc.slot, p.Log())
		}
	}
	if n := e.count("SELECT count(*) FROM cdc_relay_checkpoint WHERE slot_name IN ($1, $2)", decoding, elsewhere); n != 0 {
		t.Errorf("%d checkpoint rows recorded for the refused slots", n)
	}
	if after := positions(); after != before {
		t.Errorf("the refused slots moved: %s, then %s", before, after)
	}
}
