package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/audit"
	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// auditRun runs `cdc-relay audit --json` on the test's table with extra,
// and returns its result and exit code.
func (e *env) auditRun(extra ...string) (audit.Result, int) {
	e.t.Helper()
	args := append([]string{"audit", "--postgres-url", e.url, "--kafka-brokers", strings.Join(e.brokers, ","),
		"--topic-template", e.prefix + ".{aggregate_type}", "--json"}, extra...)
	cmd := exec.Command(relayBin, args...)
	cmd.Env = e.childEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	var res audit.Result
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		e.t.Fatalf("audit (exit %d): %v\nstdout: %s\nstderr: %s", code, jerr, out, stderr.String())
	}
	return res, code
}

// auditRow is a row of the test's table: its id, key and commit time.
type auditRow struct {
	id, key string
	at      time.Time
}

// auditInsert inserts n rows of aggregate agg, keys key0, key1, ..., one
// transaction each, and returns them.
func (e *env) auditInsert(agg string, keys ...string) []auditRow {
	e.t.Helper()
	var rows []auditRow
	for _, k := range keys {
		var r auditRow
		if err := e.conn.QueryRow(context.Background(),
			"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, 'Audited', '{}') RETURNING id::text, aggregate_id, created_at",
			agg, k).Scan(&r.id, &r.key, &r.at); err != nil {
			e.t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestAuditFindsPlantedFaults: the relay delivers a table's events to two
// topics; `cdc-relay audit --order-column created_at` finds nothing and
// exits 0, as does `audit` alone, which checks no order (a uuid key). Then faults are planted in Kafka: the first record of a topic
// deleted (kadm DeleteRecords, as retention does), a record produced
// again, a copy of one on the other topic, and two rows of one key,
// written while the relay is stopped, produced by hand in the wrong order;
// the audit, over a time window (ListOffsets by timestamp), reports each,
// exactly, names the --topic that does not exist, and exits 1.
func TestAuditFindsPlantedFaults(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := e.client()
	topicA, topicB := e.topic("A"), e.topic("B")
	for _, topic := range []string{topicA, topicB} {
		if err := kafkatest.CreateTopic(ctx, cl, topic, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	relay := e.startRelay()
	as := e.auditInsert("A", "k1", "k2", "k3", "k4", "k5", "k1", "k2")
	bs := e.auditInsert("B", "k1", "k2")
	recsA := e.readN(topicA, len(as), 60*time.Second)
	e.readN(topicB, len(bs), 60*time.Second)
	relay.stop(30 * time.Second)

	res, code := e.auditRun("--order-column", "created_at")
	if code != 0 || !res.Clean() || res.Rows != 9 || res.Matched != 9 {
		t.Fatalf("clean table: exit %d, %+v", code, res)
	}
	if res, code = e.auditRun(); code != 0 || !res.Clean() || res.OrderColumn != "" {
		t.Fatalf("clean table, no order column (a uuid key): exit %d, %+v", code, res)
	}

	// Two rows of key s, which the stopped relay never sends: produced by
	// hand, the later first.
	ss := e.auditInsert("A", "s", "s")
	record := func(topic string, r auditRow) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(r.key), Value: []byte("{}"), Timestamp: r.at,
			Headers: []kgo.RecordHeader{{Key: "id", Value: []byte(r.id)}}}
	}
	byID := map[string]*kgo.Record{}
	for _, r := range recsA {
		byID[header(r, "id")] = r
	}
	again := func(topic string, r auditRow) *kgo.Record {
		orig := byID[r.id]
		return &kgo.Record{Topic: topic, Key: orig.Key, Value: orig.Value, Headers: orig.Headers, Timestamp: orig.Timestamp}
	}
	planted := []*kgo.Record{record(topicA, ss[1]), record(topicA, ss[0]), again(topicA, as[2]), again(topicB, as[4])}
	if err := cl.ProduceSync(ctx, planted...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var dels kadm.Offsets
	dels.AddOffset(topicA, 0, 1, -1) // the first record of A, as retention removes it
	deleted, err := kadm.NewClient(cl).DeleteRecords(ctx, dels)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatal(err)
	}

	since := as[0].at.Add(-time.Second).UTC().Format(time.RFC3339Nano)
	until := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	res, code = e.auditRun("--order-column", "created_at", "--since", since, "--until", until, "--topic", e.topic("nowhere"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := audit.Result{
		MissingCount: 1, Missing: []audit.Missing{{ID: as[0].id, Topic: topicA, Key: "k1"}},
		DuplicateCount: 1, Duplicates: []audit.Duplicate{{ID: as[2].id, Topic: topicA, Records: 2}},
		WrongTopicCount: 1, WrongTopic: []audit.WrongTopic{{ID: as[4].id, Topic: topicB, Partition: 0, Offset: int64(len(bs)), Want: []string{topicA}}},
		OutOfOrderCount: 1, OutOfOrder: []audit.OutOfOrder{{Topic: topicA, Key: "s",
			Earlier: audit.Position{ID: ss[0].id, Offset: int64(len(as)) + 1}, Later: audit.Position{ID: ss[1].id, Offset: int64(len(as))}}},
	}
	got := audit.Result{MissingCount: res.MissingCount, Missing: res.Missing, DuplicateCount: res.DuplicateCount, Duplicates: res.Duplicates,
		WrongTopicCount: res.WrongTopicCount, WrongTopic: res.WrongTopic, OutOfOrderCount: res.OutOfOrderCount, OutOfOrder: res.OutOfOrder}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got %+v\nwant %+v", got, want)
	}
	if res.Rows != 11 || res.OrderColumn != "created_at" || !reflect.DeepEqual(res.TopicsAbsent, []string{e.topic("nowhere")}) {
		t.Errorf("rows %d, order column %q, topics absent %q", res.Rows, res.OrderColumn, res.TopicsAbsent)
	}
}

// TestAuditNamesTheGrant: run as a role that may not read the table, the
// audit exits 2 with the GRANT to run, naming the table and the role, and
// never prints the URL's password.
func TestAuditNamesTheGrant(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	role := e.slot + "_auditor"
	mustExec(t, e.conn, "CREATE ROLE "+role+" LOGIN PASSWORD 'aud1tpw'")
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = e.conn.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = e.conn.Exec(ctx, "DROP ROLE "+role)
	})
	u, err := url.Parse(urlAs(t, e.url, role))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "aud1tpw")
	cmd := exec.Command(relayBin, "audit", "--postgres-url", u.String(), "--kafka-brokers", strings.Join(e.brokers, ","))
	cmd.Env = e.childEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2:\n%s", err, out)
	}
	want := `run GRANT SELECT ON "public"."outbox" TO "` + role + `"`
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "aud1tpw") {
		t.Errorf("want %q and no password in:\n%s", want, out)
	}
}
