package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// The outbox layouts our users run, each in examples/: its tables created
// by its schema.sql, filled by its app.sql as the application does (the
// business row and the outbox row in one transaction), relayed by its
// relay.yaml and nothing else. Every record must carry the key, value and
// headers its row implies, on the topic its mapping names; with write-back
// the table's own status column must tell the truth afterwards.

// exampleCase is one example and what it must produce.
type exampleCase struct {
	dir      string
	topics   map[string]int // records per topic
	unrouted int            // events that match no route
	deleted  int            // records whose row the application deleted after inserting it
	// poison, if set, is an application transaction whose outbox row can
	// never become a record: it is parked DEAD, and written back as the
	// table's dead value (its failed value when it has none).
	poison string
	// timeZone, if set, is the database's TimeZone, and sameTime two
	// columns of the example's table that must then hold the same time
	// (within a minute): a delivered-at column without time zone written
	// back in UTC, like the application's own timestamps.
	timeZone string
	sameTime [3]string // table, column, column
}

var exampleCases = []exampleCase{
	{dir: "notification-outbox", topics: map[string]int{
		"notifications.deal-assigned": 1, "notifications.deal-stage-changed": 2, "notifications.deal-won": 2},
		poison: `BEGIN;
			UPDATE deals SET updated_at = now() WHERE id = 1001;
			INSERT INTO notification_outbox (deal_id, recipient_id, template, payload)
			VALUES (1001, '6f1c2a9e-4b7d-4e3a-9c51-0d2e8f3a7b10', 'deal lost!', '{"dealId": 1001}');
			COMMIT;`},
	{dir: "order-service-outbox", topics: map[string]int{"order-events": 3},
		timeZone: "Europe/Berlin", sameTime: [3]string{"outbox", "sent_at", "created_at"}},
	{dir: "publisher-worker-outbox", topics: map[string]int{"chat.conversations": 1, "chat.messages": 2},
		poison: `BEGIN;
			INSERT INTO outbox (topic, key, payload_json, idempotency_key)
			VALUES ('chat messages!', '4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d', '{"type": "message.sent"}', 'message.sent:poison');
			COMMIT;`},
	{dir: "logistics-outbox", topics: map[string]int{"logistics.Order": 2, "logistics.Shipment": 2}},
	{dir: "event-store-tags", topics: map[string]int{"wallet-events": 5, "payment-events": 1}, unrouted: 1},
	// As Debezium's outbox extension does by default, one transaction
	// deletes its row right after inserting it: the insert is relayed.
	{dir: "debezium-outbox", topics: map[string]int{"outbox.event.customer": 1, "outbox.event.order": 2}, deleted: 1},
}

func TestExamplesRelayedByTheirConfig(t *testing.T) {
	parallelOwnBroker(t)
	for _, ex := range exampleCases {
		t.Run(ex.dir, func(t *testing.T) {
			e := newEnv(t)
			if ex.timeZone != "" {
				mustExec(t, e.conn, fmt.Sprintf("DO $$BEGIN EXECUTE format('ALTER DATABASE %%I SET timezone = %%L', current_database(), '%s'); END$$", ex.timeZone))
			}
			file, p := e.startExample(ex.dir)
			e.execFile(filepath.Join("..", "examples", ex.dir, "app.sql"))
			if ex.poison != "" {
				mustExec(t, e.conn, ex.poison)
			}
			rows := e.exampleRows(file)
			gone := 0
			for topic, n := range ex.topics {
				e.readN(topic, n, 60*time.Second) // until they arrived
				recs := e.readAll(topic)
				ids := map[string]bool{}
				for _, r := range recs {
					ids[header(r, "id")] = true
				}
				if len(recs) != n || len(ids) != n {
					t.Errorf("%s holds %d records of %d events, want %d, once each", topic, len(recs), len(ids), n)
				}
				for _, r := range recs {
					if !checkExampleRecord(t, file, rows, r) {
						gone++
					}
				}
			}
			if gone != ex.deleted {
				t.Errorf("%d records name no row of the table, want %d (the rows deleted after their insert)", gone, ex.deleted)
			}
			_, families := p.scrape()
			if got := value(families, "cdc_relay_events_unrouted_total"); ex.unrouted > 0 && got != float64(ex.unrouted) {
				t.Errorf("unrouted events %v, want %d", got, ex.unrouted)
			}
			for _, tbl := range file.Tables {
				if wb := tbl.WriteBack; wb != nil {
					e.checkWriteBack(tbl, ex.poison != "")
				}
			}
			if ex.sameTime[0] != "" {
				e.checkSameTime(ex.sameTime, ex.timeZone)
			}
			p.stop(30 * time.Second)
		})
	}
}

// startExample prepares the test's database for the example in dir (its
// schema, then `migrate --config`, which creates its publication and the
// slot) and starts `run --config`, with the test's database, broker and
// slot given as flags, which override the file.
func (e *env) startExample(dir string) (*config.File, *relayProc) {
	e.t.Helper()
	path := examplePath(dir)
	file, err := config.Load(path)
	if err != nil {
		e.t.Fatal(err)
	}
	e.exampleSchema(dir)
	e.migrateConfig(path)
	return file, e.startRelayArgs(relayBin, e.configArgs(path)...)
}

// examplePath is the relay.yaml of the example in dir.
func examplePath(dir string) string { return filepath.Join("..", "examples", dir, "relay.yaml") }

// exampleSchema replaces newEnv's outbox table with the tables of the
// example in dir (its schema.sql), and drops the slot and the checkpoint
// newEnv made: that slot reads from before the example's publication
// existed, which pgoutput refuses, and `migrate --config` (or the first
// run) makes a new one.
func (e *env) exampleSchema(dir string) {
	e.t.Helper()
	mustExec(e.t, e.conn, "DROP TABLE outbox") // newEnv's default table: two examples name theirs so
	e.execFile(filepath.Join("..", "examples", dir, "schema.sql"))
	mustExec(e.t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	mustExec(e.t, e.conn, "DELETE FROM cdc_relay_checkpoint")
}

// migrateConfig runs `migrate --config path` with the test's database and
// slot, and extra; it requires the publication to be created, and returns
// what migrate printed.
func (e *env) migrateConfig(path string, extra ...string) string {
	e.t.Helper()
	args := append([]string{"migrate", "--config", path, "--postgres-url", e.url, "--slot", e.slot}, extra...)
	out, err := exec.Command(relayBin, args...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("migrate --config: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "created publication") {
		e.t.Errorf("migrate --config did not create the publication:\n%s", out)
	}
	return string(out)
}

// exampleArgs are the arguments of `run --config` for the example in dir,
// with the test's database, broker and slot.
func (e *env) exampleArgs(dir string) []string { return e.configArgs(examplePath(dir)) }

// configArgs are the arguments of `run --config path` with the test's
// database, broker and slot, quicker status updates than the default, and
// endpoints on a port of their own.
func (e *env) configArgs(path string) []string {
	return []string{"run", "--config", path,
		"--postgres-url", e.url, "--kafka-brokers", strings.Join(e.brokers, ","), "--slot", e.slot,
		"--status-interval", "200ms", "--metrics-addr", "127.0.0.1:0"}
}

// TestFanOutSurvivesKill: events that match both routes of the event
// store, written while the relay is killed with SIGKILL and started again:
// every event arrives on both topics (once or more; none is lost), because
// the checkpoint passes an event only once every copy is acked.
func TestFanOutSurvivesKill(t *testing.T) {
	parallelOwnBroker(t)
	e := newEnv(t)
	const txs, perTx = 1000, 10
	_, p := e.startExample("event-store-tags")
	done := make(chan error, 1)
	go func() {
		c, err := pgx.Connect(context.Background(), e.url)
		if err != nil {
			done <- err
			return
		}
		defer c.Close(context.Background())
		for i := range txs {
			batch := &pgx.Batch{}
			for j := range perTx {
				n := i*perTx + j
				batch.Queue(`INSERT INTO events (type, tags, data, transaction_id) VALUES ('MoneyTransferred', $1, $2, pg_current_xact_id())`,
					[]string{fmt.Sprintf("wallet_id=w%d", n), fmt.Sprintf("transfer_id=t%d", n)}, fmt.Sprintf(`{"n": %d}`, n))
			}
			if err := pgx.BeginFunc(context.Background(), c, func(tx pgx.Tx) error { return tx.SendBatch(context.Background(), batch).Close() }); err != nil {
				done <- err
				return
			}
			time.Sleep(3 * time.Millisecond) // an application's pace, so that the kill falls amid the writes
		}
		done <- nil
	}()
	e.waitFor("some copies acked", 60*time.Second, func() bool { return p.status().EventsProduced > 2000 })
	p.Kill()
	select {
	case err := <-done:
		t.Logf("the application finished before the kill (%v): the kill came late", err)
		done <- err
	default:
	}
	p = e.startRelayArgs(relayBin, e.exampleArgs("event-store-tags")...)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var positions []string
	rows, _ := e.conn.Query(context.Background(), "SELECT position::text FROM events")
	positions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(positions) != txs*perTx {
		t.Fatalf("%d events in the table (%v), want %d", len(positions), err, txs*perTx)
	}
	for _, topic := range []string{"wallet-events", "payment-events"} {
		seen := e.readIDs(topic, positions, 60*time.Second)
		t.Logf("%s: %d records for %d events", topic, seen, len(positions))
	}
	p.stop(30 * time.Second)
}

// readIDs reads topic from the start until a record with each of ids in
// its id header arrived, and returns how many records that took; it fails
// the test after timeout, naming how many ids are missing.
func (e *env) readIDs(topic string, ids []string, timeout time.Duration) int {
	e.t.Helper()
	missing := make(map[string]bool, len(ids))
	for _, id := range ids {
		missing[id] = true
	}
	cl := e.fromStart(topic)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	n := 0
	for len(missing) > 0 {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("%s: %d of %d events never arrived (%d records read)", topic, len(missing), len(ids), n)
		}
		f.EachRecord(func(r *kgo.Record) {
			n++
			delete(missing, header(r, "id"))
		})
	}
	return n
}

// execFile runs the SQL file at path on the test's database.
func (e *env) execFile(path string) {
	e.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	mustExec(e.t, e.conn, string(b))
}

// exampleRow is an outbox row's mapped columns as text (nil for NULL).
type exampleRow map[string]*string

// exampleRows reads every row of the file's tables, by table and id.
func (e *env) exampleRows(file *config.File) map[string]map[string]exampleRow {
	e.t.Helper()
	all := map[string]map[string]exampleRow{}
	for _, tbl := range file.Tables {
		m := tbl.Mapping
		cols := []string{m.IDColumn, m.PayloadColumn}
		if m.KeyColumn != "" {
			cols = append(cols, m.KeyColumn)
		}
		cols = append(cols, m.HeaderColumns...)
		sel := make([]string, len(cols))
		for i, c := range cols {
			sel[i] = pgx.Identifier{c}.Sanitize() + "::text"
		}
		rows, err := e.conn.Query(context.Background(), "SELECT "+strings.Join(sel, ", ")+" FROM "+tbl.Name())
		if err != nil {
			e.t.Fatal(err)
		}
		byID := map[string]exampleRow{}
		for rows.Next() {
			vals := make([]*string, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			row := exampleRow{}
			for i, c := range cols {
				row[c] = vals[i]
			}
			byID[*vals[0]] = row
		}
		if err := rows.Err(); err != nil {
			e.t.Fatal(err)
		}
		all[tbl.Name()] = byID
	}
	return all
}

// checkExampleRecord checks that r is what its row implies: the id header
// names a row of a table whose mapping makes its key, value and headers.
// It reports whether the row was found.
func checkExampleRecord(t *testing.T, file *config.File, rows map[string]map[string]exampleRow, r *kgo.Record) bool {
	t.Helper()
	id := header(r, "id")
	for _, tbl := range file.Tables {
		row, ok := rows[tbl.Name()][id]
		if !ok {
			continue
		}
		want := func(what string, got []byte, col string) {
			v := row[col]
			switch {
			case v == nil && got != nil:
				t.Errorf("%s record %s: %s %q, want none (column %s is NULL)", r.Topic, id, what, got, col)
			case v != nil && !bytes.Equal(got, []byte(*v)):
				t.Errorf("%s record %s: %s %q, want %q (column %s)", r.Topic, id, what, got, *v, col)
			}
		}
		m := tbl.Mapping
		want("value", r.Value, m.PayloadColumn)
		if m.KeyColumn != "" {
			want("key", r.Key, m.KeyColumn)
		} else if r.Key != nil {
			t.Errorf("%s record %s: key %q, want none", r.Topic, id, r.Key)
		}
		for i, c := range m.HeaderColumns {
			want("header "+m.HeaderNames[i], []byte(header(r, m.HeaderNames[i])), c)
		}
		return true
	}
	if id == "" {
		t.Errorf("%s record without an id header", r.Topic)
	}
	return false
}

// checkWriteBack waits until the table's status column says every row
// was delivered (or, with parked, that the one parked row failed or was
// given up on), and checks the note's own questions: nothing is left
// pending or being tried again, the dead rows are the parked ones, the delivered
// timestamp is set. The dead value (an event given up on, or a row that
// cannot become a record) is not pending.
func (e *env) checkWriteBack(tbl outbox.Table, parked bool) {
	e.t.Helper()
	wb := tbl.WriteBack
	status := pgx.Identifier{wb.StatusColumn}.Sanitize()
	undatedCount := "0"
	if wb.DeliveredAtColumn != "" {
		undatedCount = fmt.Sprintf("count(*) FILTER (WHERE %s::text = $1 AND %s IS NULL)", status, pgx.Identifier{wb.DeliveredAtColumn}.Sanitize())
	}
	query := fmt.Sprintf(`SELECT count(*) FILTER (WHERE %[1]s::text NOT IN ($1, $2, $3)), count(*) FILTER (WHERE %[1]s::text = $1),
		count(*) FILTER (WHERE %[1]s::text IN ($2, $3)), %[3]s FROM %[2]s`, status, tbl.Name(), undatedCount)
	var pending, delivered, failed, undated int
	e.waitFor("write-back leaves no row pending", 30*time.Second, func() bool {
		if err := e.conn.QueryRow(context.Background(), query, wb.Delivered, wb.DeadValue(), wb.DeadValue()).Scan(&pending, &delivered, &failed, &undated); err != nil {
			e.t.Fatal(err)
		}
		return pending == 0
	})
	if undated != 0 {
		e.t.Errorf("%s: %d rows %s without %s", tbl.Name(), undated, wb.Delivered, wb.DeliveredAtColumn)
	}
	var dead int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_delivery WHERE status IN ('FAILED', 'DEAD')").Scan(&dead); err != nil {
		e.t.Fatal(err)
	}
	if failed != dead || parked != (failed == 1) {
		e.t.Errorf("%s: %d rows %s, %d events parked; want the parked ones, and one parked: %v", tbl.Name(), failed, wb.DeadValue(), dead, parked)
	}
	if wb.ErrorColumn != "" && failed > 0 {
		var reason string
		q := fmt.Sprintf("SELECT %s FROM %s WHERE %s::text IN ($1, $2)", pgx.Identifier{wb.ErrorColumn}.Sanitize(), tbl.Name(), status)
		if err := e.conn.QueryRow(context.Background(), q, wb.DeadValue(), wb.DeadValue()).Scan(&reason); err != nil || reason == "" {
			e.t.Errorf("%s: the parked row's %s is %q (%v), want why", tbl.Name(), wb.ErrorColumn, reason, err)
		}
	}
}

// checkSameTime checks that every row of the table named by cols[0] that
// has both columns cols[1] and cols[2] set holds the same time in both,
// within a minute, with the database in zone.
func (e *env) checkSameTime(cols [3]string, zone string) {
	e.t.Helper()
	a, b := pgx.Identifier{cols[1]}.Sanitize(), pgx.Identifier{cols[2]}.Sanitize()
	var rows, off int
	var worst float64
	err := e.conn.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE abs(extract(epoch FROM %[1]s - %[2]s)) > 60),
		coalesce(max(abs(extract(epoch FROM %[1]s - %[2]s))), 0)::float8 FROM %[3]s WHERE %[1]s IS NOT NULL AND %[2]s IS NOT NULL`,
		a, b, pgx.Identifier{cols[0]}.Sanitize())).Scan(&rows, &off, &worst)
	switch {
	case err != nil:
		e.t.Fatal(err)
	case rows == 0:
		e.t.Errorf("%s: no row has both %s and %s", cols[0], cols[1], cols[2])
	case off > 0:
		e.t.Errorf("%s: with the database in %s, %d of %d rows have %s and %s over a minute apart (up to %.0f s): the relay did not write UTC",
			cols[0], zone, off, rows, cols[1], cols[2], worst)
	}
}

// TestConfigNamingAMissingColumnStopsRunAtStart: a config file that maps a
// column the table lacks stops `run` before it streams, naming the column
// and the table.
func TestConfigNamingAMissingColumnStopsRunAtStart(t *testing.T) {
	parallelOwnBroker(t)
	e := newEnv(t)
	path := filepath.Join(t.TempDir(), "relay.yaml")
	yaml := `tables:
  - table: public.outbox
    id: id
    key: aggregate_id
    value: payload
    topic: "` + e.prefix + `.{aggregate_type}"
    headers: {tenant: tenant_id}
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(relayBin, "run", "--config", path, "--postgres-url", e.url,
		"--kafka-brokers", strings.Join(e.brokers, ","), "--slot", e.slot, "--metrics-addr", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Fatalf("run exited %d (%v), want 1:\n%s", code, err, out)
	}
	for _, want := range []string{`tenant_id`, "public.outbox", "check-config"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error does not name %s:\n%s", want, out)
		}
	}
	if e.slotActive() {
		t.Error("the relay streamed the slot")
	}
}
