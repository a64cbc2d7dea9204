package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The outbox table changing under the relay: dropped and created again,
// removed from the publication, partitioned, its columns renamed or their
// types changed.

// outboxColumns is the default outbox layout (migrations/sql/outbox.sql).
const outboxColumns = `id uuid NOT NULL DEFAULT gen_random_uuid(), aggregate_type text NOT NULL, aggregate_id text NOT NULL,
	event_type text NOT NULL, topic text, payload jsonb NOT NULL, headers jsonb, created_at timestamptz NOT NULL DEFAULT now()`

// migrate runs `cdc-relay migrate` on the test's database and slot, and
// returns its output. The slot is the test's own: slots are named across
// the cluster, so the default name in two tests' databases at once would
// collide.
func (e *env) migrate() string {
	e.t.Helper()
	out, err := exec.Command(relayBin, "migrate", "--postgres-url", e.url, "--slot", e.slot).CombinedOutput()
	if err != nil {
		e.t.Fatalf("migrate: %v\n%s", err, out)
	}
	return string(out)
}

// confirmedAtMost fails the test when the slot's confirmed position or the
// checkpoint row is past lsn.
func (e *env) confirmedAtMost(lsn pglogrepl.LSN, what string) {
	e.t.Helper()
	if slot, cp := e.lsn(slotLSN), e.lsn(checkpointLSN); slot > lsn || cp > lsn {
		e.t.Fatalf("the slot confirmed %s and the checkpoint row holds %s, past %s %s: those inserts are lost", slot, cp, lsn, what)
	}
}

// distinct drops the records whose event id came before: a relay that
// stopped on an error did not confirm its last deliveries, and sends them
// again after a restart.
func distinct(recs []*kgo.Record) []*kgo.Record {
	seen := map[string]bool{}
	var out []*kgo.Record
	for _, r := range recs {
		if id := header(r, "id"); !seen[id] {
			seen[id] = true
			out = append(out, r)
		}
	}
	return out
}

// readDistinct reads topic from the start until it holds n distinct
// events, and returns them in order.
func (e *env) readDistinct(topic string, n int) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(distinct(recs)) < n {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read %s: %d of %d distinct events within 30s", topic, len(distinct(recs)), n)
		}
		recs = append(recs, f.Records()...)
	}
	return distinct(recs)
}

// parked returns the status table's rows as "STATUS topic: reason".
func (e *env) parked() []string {
	e.t.Helper()
	rows, err := e.conn.Query(context.Background(), "SELECT status, topic, last_error FROM outbox_delivery ORDER BY id")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var status, topic, reason string
		if err := rows.Scan(&status, &topic, &reason); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, status+" "+topic+": "+reason)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestOutboxTableLeavesThePublication: PostgreSQL sends nothing for a table
// that is not in the publication, and keepalives would carry the slot past
// its inserts. The relay stops instead, says why and how to recover, and
// neither the slot nor the checkpoint row passes the first insert it never
// saw. After `migrate` adds the table back, the relay refuses to start
// until the recover command it printed has published the rows inserted
// meanwhile; then it starts again, and every event has arrived.
func TestOutboxTableLeavesThePublication(t *testing.T) {
	parallel(t)
	tests := []struct {
		name   string
		change []string
		want   string
	}{
		// In one transaction: a check between the two statements would see
		// the table gone, which the relay reports as removed from the
		// publication (the next case), not as created again.
		{"dropped and created again", []string{"DROP TABLE outbox; CREATE TABLE outbox (" + outboxColumns + ")"}, "was dropped and created again"},
		{"removed from the publication", []string{"ALTER PUBLICATION cdc_relay DROP TABLE outbox"}, `was removed from publication "cdc_relay"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			relay := e.startRelay()
			topic := e.topic("order")
			insert(t, e.conn, "order", "k", "Before", `{"n": "before"}`)
			e.readN(topic, 1, 30*time.Second)
			end := e.lsn(insertLSN)
			e.waitFor("the slot confirms the first event", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })

			for _, sql := range tt.change {
				mustExec(t, e.conn, sql)
			}
			lost := e.lsn(currentLSN)
			for i := range 3 {
				insert(t, e.conn, "order", "k", "Unpublished", fmt.Sprintf(`{"n": "unpublished %d"}`, i))
			}
			e.waitFor("the relay stops", 60*time.Second, func() bool {
				e.confirmedAtMost(lost, "the first insert into the unpublished table")
				return !relay.Running()
			})
			e.confirmedAtMost(lost, "the first insert into the unpublished table")
			if relay.Err() == nil {
				t.Fatalf("the relay exited 0; want an error")
			}
			for _, s := range []string{tt.want, "confirmed nothing past", "cdc-relay migrate", "cdc-relay recover"} {
				if !strings.Contains(relay.Log(), s) {
					t.Fatalf("the relay's error does not say %q:\n%s", s, relay.Log())
				}
			}

			// migrate adds the table back; a start before recover is
			// refused (the checkpoint row keeps the publication's stamp);
			// the printed recover command publishes the rows inserted
			// meanwhile, and the relay goes on.
			e.migrate()
			refused := e.spawnRelay()
			e.waitFor("a start before recover is refused", 60*time.Second, func() bool { return !refused.Running() })
			if refused.Err() == nil || !strings.Contains(refused.Log(), "cdc-relay recover --since") {
				t.Fatalf("the relay started before recover: %v\n%s", refused.Err(), refused.Log())
			}
			e.recoverPrinted(relay.Log())
			relay = e.startRelay()
			insert(t, e.conn, "order", "k", "After", `{"n": "after"}`)
			want := []string{`{"n": "before"}`, `{"n": "unpublished 0"}`, `{"n": "unpublished 1"}`, `{"n": "unpublished 2"}`, `{"n": "after"}`}
			e.readDistinct(topic, len(want))
			assertHasValues(t, e.readAll(topic), want)
			relay.stop(30 * time.Second)
		})
	}
}

// TestPartitionedOutbox: an outbox partitioned by month is published via
// its root by `migrate` (idempotently); rows inserted into several
// partitions are relayed in commit order with their timestamps; retention
// deletes the old ones only.
func TestPartitionedOutbox(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	for _, sql := range []string{
		"DROP PUBLICATION cdc_relay",
		"DROP TABLE outbox",
		"CREATE TABLE outbox (" + outboxColumns + ", PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)",
		"CREATE INDEX ON outbox (created_at)",
		"CREATE TABLE outbox_2020_01 PARTITION OF outbox FOR VALUES FROM ('2020-01-01') TO ('2020-02-01')",
		"CREATE TABLE outbox_2020_02 PARTITION OF outbox FOR VALUES FROM ('2020-02-01') TO ('2020-03-01')",
		"CREATE TABLE outbox_2020_03 PARTITION OF outbox FOR VALUES FROM ('2020-03-01') TO ('2020-04-01')",
		"CREATE TABLE outbox_default PARTITION OF outbox DEFAULT",
	} {
		mustExec(t, e.conn, sql)
	}
	if out := e.migrate(); !strings.Contains(out, "created publication") {
		t.Fatalf("migrate did not create the publication: %s", out)
	}
	if out := e.migrate(); strings.Contains(out, "publication") {
		t.Fatalf("migrate changed the publication again: %s", out)
	}
	relay := e.startRelay("--retention", "24h", "--cleanup-interval", "200ms")

	// 10 transactions of 4 rows, one in each partition, all of one key.
	months := []string{"'2020-02-15 10:00:00+00'", "now()", "'2020-01-15 10:00:00+00'", "'2020-03-15 10:00:00+00'"}
	seq := 0
	for tx := 0; tx < 10; tx++ {
		var values []string
		for _, at := range months {
			values = append(values, fmt.Sprintf(`('order', 'k', 'E', '{"key": "k", "seq": %d}', %s)`, seq, at))
			seq++
		}
		mustExec(t, e.conn, "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at) VALUES "+strings.Join(values, ", "))
	}
	recs := e.readN(e.topic("order"), seq, 30*time.Second)
	checkExactlyOnce(t, recs, seq, map[string]int{"k": seq})
	for _, r := range recs {
		want := []int{2020, time.Now().Year(), 2020, 2020}[decodeSeq(t, r).Seq%4]
		if r.Timestamp.Year() != want {
			t.Fatalf("record %s: timestamp %s, want one in %d", r.Value, r.Timestamp, want)
		}
	}

	e.waitFor("retention deletes the rows of 2020", 30*time.Second, func() bool {
		var old, kept int
		err := e.conn.QueryRow(context.Background(),
			"SELECT count(*) FILTER (WHERE created_at < '2021-01-01'), count(*) FILTER (WHERE created_at >= '2021-01-01') FROM outbox").Scan(&old, &kept)
		if err != nil {
			t.Fatal(err)
		}
		if kept != 10 {
			t.Fatalf("%d of the 10 rows of today left: retention deleted new rows", kept)
		}
		return old == 0
	})
	relay.stop(30 * time.Second)
}

// TestTimestampColumnChangesType: a timestamp column of a type the mapping
// cannot use parks each row, with the reason, instead of stopping the
// relay; other traffic keeps confirming. The parked rows have every part
// of their record but its timestamp: they are parked FAILED, and the
// poller sends them with the time of delivery, with no person (on main
// they were DEAD until `failed retry`). Once the type is changed back,
// rows are relayed again with their own. PostgreSQL replays the schema of
// the rows it sends, so a restart after the change back reads the
// text-typed schema again: it must not get stuck there either.
func TestTimestampColumnChangesType(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")
	mustExec(t, e.conn, "CREATE TABLE other (n int)") // not published
	const toText = "ALTER TABLE outbox ALTER COLUMN created_at TYPE text"
	const back = "ALTER TABLE outbox ALTER COLUMN created_at TYPE timestamptz USING created_at::timestamptz"
	insert(t, e.conn, "order", "k", "E", `{"n": "A"}`)
	e.readN(topic, 1, 30*time.Second)

	mustExec(t, e.conn, toText)
	insert(t, e.conn, "order", "kB", "E", `{"n": "B"}`)
	e.waitFor("the row is parked and sent by the poller", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 1 })
	if p := e.parked(); !strings.Contains(p[0], `timestamp column "created_at" has type text`) || !strings.Contains(p[0], "--timestamp-column") ||
		!strings.Contains(p[0], "the poller sends it with the time of delivery") {
		t.Fatalf("parked %q; want the reason, the fix and what sends it", p)
	}
	mustExec(t, e.conn, "INSERT INTO other SELECT generate_series(1, 1000)")
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past other tables' traffic", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	if !relay.Running() {
		t.Fatalf("the relay stopped: %v", relay.Err())
	}

	// A restart while the column is text.
	relay.stop(30 * time.Second)
	relay = e.startRelay()
	insert(t, e.conn, "order", "kC", "E", `{"n": "C"}`)
	e.waitFor("the next row is parked and sent", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 2 })

	mustExec(t, e.conn, back)
	insert(t, e.conn, "order", "k", "E", `{"n": "D"}`)
	recs := e.readDistinct(topic, 4)
	assertValueSet(t, recs, `{"n": "A"}`, `{"n": "B"}`, `{"n": "C"}`, `{"n": "D"}`)
	for _, r := range recs {
		if time.Since(r.Timestamp) > time.Hour {
			t.Fatalf("record %s has timestamp %s, want its created_at or the time of delivery", r.Value, r.Timestamp)
		}
	}

	// Changed and changed back while no relay runs: the restart reads both
	// schemas.
	relay.stop(30 * time.Second)
	mustExec(t, e.conn, toText)
	insert(t, e.conn, "order", "kE", "E", `{"n": "E"}`)
	mustExec(t, e.conn, back)
	insert(t, e.conn, "order", "k", "E", `{"n": "F"}`)
	relay = e.startRelay()
	assertValueSet(t, e.readDistinct(topic, 6), `{"n": "A"}`, `{"n": "B"}`, `{"n": "C"}`, `{"n": "D"}`, `{"n": "E"}`, `{"n": "F"}`)
	e.waitFor("the row written as text is sent by the poller", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 3 })

	// Once more: nothing is sent or parked twice.
	relay.stop(30 * time.Second)
	relay = e.startRelay()
	insert(t, e.conn, "order", "k", "E", `{"n": "G"}`)
	e.readDistinct(topic, 7)
	relay.stop(30 * time.Second)
	if recs := e.readAll(topic); len(recs) != 7 {
		t.Fatalf("%d records, want 7, each once", len(recs))
	}
	if n, d := e.statusCount(""), e.statusCount("DELIVERED"); n != 3 || d != 3 {
		t.Fatalf("%d status rows, %d delivered; want 3, all delivered: %q", n, d, e.parked())
	}
}

// assertValueSet says recs hold exactly the values want, in any order.
func assertValueSet(t *testing.T, recs []*kgo.Record, want ...string) {
	t.Helper()
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRequiredColumnRenamed: the relay stops at the first row written
// without a required column, naming it and the fix. After the column is
// renamed back, the restart reads that row's schema again: the row is
// parked, and the relay goes on.
func TestRequiredColumnRenamed(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")
	insert(t, e.conn, "order", "k", "E", `{"n": "A"}`)
	e.readN(topic, 1, 30*time.Second)

	mustExec(t, e.conn, "ALTER TABLE outbox RENAME aggregate_id TO agg_id")
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, agg_id, event_type, payload) VALUES ('order', 'k', 'E', '{"n": "B"}')`)
	e.waitFor("the relay stops", 60*time.Second, func() bool { return !relay.Running() })
	if relay.Err() == nil {
		t.Fatalf("the relay exited 0; want an error")
	}
	for _, s := range []string{`no column "aggregate_id" (the record key)`, "--key-column", "rename the column back"} {
		if !strings.Contains(relay.Log(), s) {
			t.Fatalf("the relay's error does not say %q:\n%s", s, relay.Log())
		}
	}

	mustExec(t, e.conn, "ALTER TABLE outbox RENAME agg_id TO aggregate_id")
	relay = e.startRelay()
	insert(t, e.conn, "order", "k", "E", `{"n": "C"}`)
	assertValues(t, e.readDistinct(topic, 2), []string{`{"n": "A"}`, `{"n": "C"}`})
	e.waitFor("the row written without the column is parked", 30*time.Second, func() bool { return e.statusCount("DEAD") == 1 })
	// No topic: `cdc-relay failed retry` cannot deliver a copy without its key.
	if p := e.parked(); !strings.HasPrefix(p[0], "DEAD : ") || !strings.Contains(p[0], `no column "aggregate_id"`) || !strings.Contains(p[0], "cdc-relay recover") {
		t.Fatalf("parked %q; want a DEAD row without a topic, with the reason and the way to publish it again", p)
	}
	relay.stop(30 * time.Second)
}
