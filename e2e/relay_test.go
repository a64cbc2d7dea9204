package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

type seqPayload struct {
	Key string `json:"key"`
	Seq int    `json:"seq"`
}

func decodeSeq(t *testing.T, r *kgo.Record) seqPayload {
	t.Helper()
	var p seqPayload
	if err := json.Unmarshal(r.Value, &p); err != nil {
		t.Fatalf("record value %q: %v", r.Value, err)
	}
	return p
}

// checkExactlyOnce requires every id once and, per key, seq 0..n-1 in order.
func checkExactlyOnce(t *testing.T, recs []*kgo.Record, wantTotal int, perKey map[string]int) {
	t.Helper()
	ids := map[string]bool{}
	next := map[string]int{}
	for _, r := range recs {
		id := header(r, "id")
		if id == "" {
			t.Fatalf("record without id header: %s", r.Value)
		}
		if ids[id] {
			t.Fatalf("duplicate event id %s (%s)", id, r.Value)
		}
		ids[id] = true
		p := decodeSeq(t, r)
		if string(r.Key) != p.Key {
			t.Fatalf("record key %q, payload key %q", r.Key, p.Key)
		}
		if p.Seq != next[p.Key] {
			t.Fatalf("key %s: got seq %d, want %d (out of commit order, lost or duplicated)", p.Key, p.Seq, next[p.Key])
		}
		next[p.Key]++
	}
	if len(ids) != wantTotal {
		t.Fatalf("got %d distinct events, want %d", len(ids), wantTotal)
	}
	for k, n := range perKey {
		if next[k] != n {
			t.Fatalf("key %s: got %d events, want %d", k, next[k], n)
		}
	}
}

// writeEvents inserts txs transactions of perTx events from workers
// connections; each worker owns its keys, so per-key commit order is the
// order the worker inserts. It returns how many events each key got.
func (e *env) writeEvents(workers, txs, perTx, keys int) map[string]int {
	e.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	counts := make([]map[string]int, workers)
	for w := 0; w < workers; w++ {
		counts[w] = map[string]int{}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			conn, err := pgx.Connect(context.Background(), e.url)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			seq := counts[w]
			for i := w; i < txs; i += workers {
				err := pgx.BeginFunc(context.Background(), conn, func(tx pgx.Tx) error {
					for j := 0; j < perTx; j++ {
						// Keys k with k % workers == w belong to worker w.
						k := fmt.Sprintf("key-%d", w+workers*((i*perTx+j)%(keys/workers)))
						payload := fmt.Sprintf(`{"key": %q, "seq": %d}`, k, seq[k])
						if _, err := tx.Exec(context.Background(),
							"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', $1, 'OrderChanged', $2)",
							k, payload); err != nil {
							return err
						}
						seq[k]++
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatalf("write events: %v", err)
	}
	all := map[string]int{}
	for _, c := range counts {
		for k, n := range c {
			all[k] += n
		}
	}
	return all
}

func TestExactlyOnceInCommitOrder(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	perKey := e.writeEvents(5, 1000, 10, 50)
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	recs := e.readAll(e.topic("order"))
	checkExactlyOnce(t, recs, 10000, perKey)
	if len(perKey) != 50 {
		t.Fatalf("wrote %d keys, want 50", len(perKey))
	}
	relay.stop(30 * time.Second)
}

func TestRollbacksAndSavepointsProduceNothing(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.startRelay()
	ctx := context.Background()
	c := e.conn
	insert(t, c, "order", "k", "First", `{"n": "first"}`)

	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	insert(t, tx, "order", "k", "RolledBack", `{"n": "rolled back"}`)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	tx, err = c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	insert(t, tx, "order", "k", "Kept", `{"n": "kept before savepoint"}`)
	mustExecTx(t, tx, "SAVEPOINT s1")
	insert(t, tx, "order", "k", "RolledBack", `{"n": "after savepoint"}`)
	mustExecTx(t, tx, "ROLLBACK TO SAVEPOINT s1")
	insert(t, tx, "order", "k", "Kept", `{"n": "kept after savepoint"}`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	insert(t, c, "order", "k", "Last", `{"n": "last"}`)

	// One key, one partition: the last event arriving means everything
	// before it in commit order has arrived.
	recs := e.readN(e.topic("order"), 4, 30*time.Second)
	want := []string{`{"n": "first"}`, `{"n": "kept before savepoint"}`, `{"n": "kept after savepoint"}`, `{"n": "last"}`}
	assertValues(t, recs, want)
	if all := e.readAll(e.topic("order")); len(all) != 4 {
		t.Fatalf("topic holds %d records, want 4", len(all))
	}
}

func mustExecTx(t *testing.T, tx pgx.Tx, sql string) {
	t.Helper()
	if _, err := tx.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func assertValues(t *testing.T, recs []*kgo.Record, want []string) {
	t.Helper()
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestInterleavedTransactionsArriveInCommitOrder(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.startRelay()
	ctx := context.Background()
	a, b := mustConnect(t, e.url), mustConnect(t, e.url)
	defer a.Close(ctx)
	defer b.Close(ctx)
	txA, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	txB, err := b.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	insert(t, txA, "order", "k", "A", `{"tx": "A", "n": 1}`)
	insert(t, txB, "order", "k", "B", `{"tx": "B", "n": 1}`)
	insert(t, txA, "order", "k", "A", `{"tx": "A", "n": 2}`)
	insert(t, txB, "order", "k", "B", `{"tx": "B", "n": 2}`)
	if err := txB.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	recs := e.readN(e.topic("order"), 4, 30*time.Second)
	assertValues(t, recs, []string{`{"n": 1, "tx": "B"}`, `{"n": 2, "tx": "B"}`, `{"n": 1, "tx": "A"}`, `{"n": 2, "tx": "A"}`})
}

func TestUpdateDeleteTruncateProduceNothing(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	// A publication of every operation, so the relay itself must ignore
	// them (the default publication publishes inserts only).
	mustExec(t, e.conn, "CREATE PUBLICATION all_ops FOR TABLE outbox")
	// pgoutput reads publications as of the WAL it decodes: the slot that
	// migrate made is older than all_ops, so the relay makes a new one.
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	mustExec(t, e.conn, "DELETE FROM cdc_relay_checkpoint WHERE slot_name = $1", e.slot)
	e.startRelay("--publication", "all_ops")
	insert(t, e.conn, "order", "k", "First", `{"n": "first"}`)
	mustExec(t, e.conn, "UPDATE outbox SET payload = '{\"n\": \"updated\"}'")
	mustExec(t, e.conn, "DELETE FROM outbox")
	insert(t, e.conn, "order", "k", "Second", `{"n": "second"}`)
	mustExec(t, e.conn, "TRUNCATE outbox")
	insert(t, e.conn, "order", "k", "Last", `{"n": "last"}`)
	recs := e.readN(e.topic("order"), 3, 30*time.Second)
	assertValues(t, recs, []string{`{"n": "first"}`, `{"n": "second"}`, `{"n": "last"}`})
	if all := e.readAll(e.topic("order")); len(all) != 3 {
		t.Fatalf("topic holds %d records, want 3", len(all))
	}
}

func TestSIGTERMRestartDeliversEverythingOnce(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")

	// Write continuously while the relay is stopped and started again.
	w := e.startWriter(0)
	cl := e.client()
	e.waitFor("some events arrive", 30*time.Second, func() bool { return e.totalRecords(cl, topic) >= 500 })
	relay.stop(30 * time.Second)
	stoppedAt := e.totalRecords(cl, topic)
	w.waitWritten(w.count() + 1000)
	perKey := w.stop()
	total := w.count()
	if stoppedAt >= total {
		t.Fatalf("the relay stopped after all %d events: the test did not stop it mid-stream", stoppedAt)
	}
	// Inserted while stopped, too.
	relay = e.startRelay()
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	checkExactlyOnce(t, e.readAll(topic), total, perKey)
	t.Logf("stopped after %d of %d events", stoppedAt, total)
	relay.stop(30 * time.Second)
}

// TestIdleSlotFollowsWAL: with no outbox traffic, 50 MB of WAL written to
// another table, the slot's confirmed position passes all of it (no
// heartbeat table): an idle slot holds no WAL.
func TestIdleSlotFollowsWAL(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.startRelay()
	// No outbox traffic; 50 MB of WAL elsewhere.
	mustExec(t, e.conn, "CREATE TABLE filler (id serial, pad text)")
	from := e.lsn(currentLSN)
	for i := 0; i < 10; i++ {
		mustExec(t, e.conn, "INSERT INTO filler (pad) SELECT repeat(md5(g::text), 32) FROM generate_series(1, 5000) g")
	}
	written := e.lsn(currentLSN)
	if written-from < 50<<20 {
		t.Fatalf("wrote only %d bytes of WAL, want 50 MB", written-from)
	}
	start := time.Now()
	var lag int64
	// The slot passes the end of the test's own writes: other tests
	// write WAL on the shared cluster meanwhile, so its distance from
	// the cluster's WAL end is logged, not bounded.
	e.waitFor("confirmed_flush_lsn passes the WAL written by the test", 30*time.Second, func() bool {
		return e.lsn(slotLSN) >= written
	})
	lag = int64(e.lsn(currentLSN)) - int64(e.lsn(slotLSN))
	t.Logf("slot past the writes %s after them, %d bytes behind the WAL end", time.Since(start).Round(time.Millisecond), lag)
}

func TestLargeTransactionBoundedMemory(t *testing.T) {
	// Alone: it asserts peak memory.
	if testing.Short() {
		t.Skip("200,000-row transaction")
	}
	e := newEnv(t)
	relay := e.startRelayBin(plainBin) // the race detector's shadow memory would dwarf the relay's
	const rows = 200000
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'order', 'key-' || (g % 100), 'Bulk', json_build_object('seq', g, 'pad', repeat('x', 200))::jsonb
		FROM generate_series(1, $1) g`, rows)
	end := e.lsn(insertLSN)
	e.waitFor("the 200,000-row transaction is confirmed", 3*time.Minute, func() bool { return e.lsn(slotLSN) >= end })
	rss := relay.peakRSS()
	t.Logf("relay peak RSS %.1f MiB for one %d-row transaction", float64(rss)/(1<<20), rows)
	if rss >= 200<<20 {
		t.Fatalf("relay peak RSS %d MiB, want under 200 MiB", rss>>20)
	}
	cl := e.client()
	n := int64(0)
	for _, o := range e.endOffsets(cl, e.topic("order")) {
		n += o
	}
	if n != rows {
		t.Fatalf("topic holds %d records, want %d", n, rows)
	}
	relay.stop(30 * time.Second)
}

func TestKcatReadsWhatTheRelayProduced(t *testing.T) {
	parallel(t)
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (Debian: apt-get install kcat); `make test` installs it")
	}
	e := newEnv(t)
	e.startRelay()
	type row struct{ key, payload, id string }
	var rows []row
	for i := 0; i < 5; i++ {
		r := row{key: fmt.Sprintf("order-%d", i), payload: fmt.Sprintf(`{"total": %d}`, 100+i)}
		err := e.conn.QueryRow(context.Background(), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, headers)
			VALUES ('order', $1, 'OrderPlaced', $2, '{"trace": "t-1"}') RETURNING id::text`, r.key, r.payload).Scan(&r.id)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	topic := e.topic("order")
	e.readN(topic, 5, 30*time.Second) // wait until delivered

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-b", strings.Join(e.brokers, ","), "-C", "-t", topic,
		"-o", "beginning", "-e", "-q", "-f", "%k\t%s\t%h\n").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("kcat line %q", line)
		}
		got[parts[0]] = parts[1] + "\t" + parts[2]
	}
	if len(got) != len(rows) {
		t.Fatalf("kcat read %d records, want %d:\n%s", len(got), len(rows), out)
	}
	for _, r := range rows {
		line, ok := got[r.key]
		if !ok {
			t.Fatalf("kcat did not see key %s:\n%s", r.key, out)
		}
		value, headers, _ := strings.Cut(line, "\t")
		if value != r.payload {
			t.Errorf("key %s: value %q, want %q", r.key, value, r.payload)
		}
		for _, h := range []string{"id=" + r.id, "event_type=OrderPlaced", "aggregate_type=order", "aggregate_id=" + r.key, "trace=t-1"} {
			if !strings.Contains(","+headers+",", ","+h+",") {
				t.Errorf("key %s: headers %q lack %s", r.key, headers, h)
			}
		}
	}
}

func TestMigrateRefusesWALLevelReplica(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := pgtemp.Start(ctx, pgtemp.Options{WALLevel: "replica"})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	out, err := exec.Command(relayBin, "migrate", "--postgres-url", pg.URL("postgres")).CombinedOutput()
	if err == nil {
		t.Fatalf("migrate succeeded on wal_level=replica:\n%s", out)
	}
	if !strings.Contains(string(out), "wal_level") || !strings.Contains(string(out), "logical") {
		t.Fatalf("migrate's error does not say what to fix (wal_level = logical):\n%s", out)
	}
}

// TestConfirmNeverPassesUnackedEvent holds every produce request at the
// broker while WAL keeps moving elsewhere (so keepalives keep offering newer
// positions), and checks the slot never confirms past the start of the
// commit record of the transaction whose event is not acked (PostgreSQL
// sends again a transaction whose commit starts at or after the confirmed
// position); then lets Kafka answer and checks it arrives.
func TestConfirmNeverPassesUnackedEvent(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.needKfake()
	e.startRelay()
	unblock := e.blockProduce()

	tx, err := e.conn.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	insert(t, tx, "order", "k", "Held", `{"n": "held"}`)
	beforeCommit := e.lsn(insertLSN) // on e.conn, inside tx
	var xid string
	if err := tx.QueryRow(context.Background(), "SELECT xid(pg_current_xact_id())::text").Scan(&xid); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	bound := e.commitStart(xid, beforeCommit)
	t.Logf("the insert at %s, its commit record at %s", beforeCommit, bound)

	mustExec(t, e.conn, "CREATE TABLE filler (pad text)")
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		mustExec(t, e.conn, "INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 200)")
		if got := e.lsn(slotLSN); got > bound {
			t.Fatalf("slot confirmed %s, past the commit of an event Kafka has not acked (its commit record at %s; the insert at %s)", got, bound, beforeCommit)
		}
		time.Sleep(50 * time.Millisecond) // pace the WAL writes; not a synchronisation
	}
	unblock()
	recs := e.readN(e.topic("order"), 1, 30*time.Second)
	assertValues(t, recs, []string{`{"n": "held"}`})
	end := e.lsn(insertLSN)
	e.waitFor("the slot advances once the event is acked", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
}

// commitStart returns where the commit record of transaction xid starts,
// read from the WAL after from with pg_walinspect (PostgreSQL 15+): the
// highest position a slot may confirm while that transaction's events are
// not acked, as WAL other sessions write meanwhile (the relay's own
// checkpoint, other tests' databases) may commit between its insert and
// its commit. Where pg_walinspect is missing, from itself: stricter.
func (e *env) commitStart(xid string, from pglogrepl.LSN) pglogrepl.LSN {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		e.t.Logf("no pg_walinspect (%v): the insert's position bounds the slot's", err)
		return from
	}
	// The end is the flush position: PostgreSQL 15 refuses one past it
	// ("cannot accept future end LSN"), and a committed transaction's
	// commit record is flushed before COMMIT returns (synchronous_commit on).
	var s *string
	err := e.conn.QueryRow(ctx, "SELECT min(start_lsn)::text FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn())"+
		" WHERE resource_manager = 'Transaction' AND record_type = 'COMMIT' AND xid = $2::xid", from.String(), xid).Scan(&s)
	if err != nil {
		e.t.Fatalf("find the commit record of transaction %s: %v", xid, err)
	}
	if s == nil {
		e.t.Fatalf("no commit record of transaction %s between %s and the flush position", xid, from)
	}
	lsn, err := pglogrepl.ParseLSN(*s)
	if err != nil {
		e.t.Fatal(err)
	}
	return lsn
}
