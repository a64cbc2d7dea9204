package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/status"
)

// pg is the package's PostgreSQL, started by the first test that asks
// for a database: each is a copy of one with the relay's tables.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{
	Template: func(ctx context.Context, conn *pgx.Conn) error {
		_, err := migrations.Apply(ctx, conn, migrations.DefaultConfig())
		return err
	},
})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// TestPublisherEndpoints: ?publisher= lists, retries, pauses and resumes
// a webhook publisher's rows and topics through its status store, and
// leaves Kafka's (the relay's own methods) alone, and the other way round;
// an id of another publisher's is a 404 that says whose it is; a name that
// is not one, or not the relay's, is a 400; a relay not connected, a 503.
func TestPublisherEndpoints(t *testing.T) {
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute,
		`INSERT INTO outbox_delivery (event_id, topic, record_key, status, attempts, last_error, publisher) VALUES
		  ('e-1', 'orders', 'k', 'FAILED', 2, 'UNKNOWN_TOPIC_OR_PARTITION', 'kafka'),
		  ('e-1', 'orders', 'k', 'DEAD', 5, '410 Gone', 'partner'),
		  ('e-3', 'orders', 'j', 'PAUSED', 0, 'its topic is paused', 'partner')`)
	store := func(publisher string) *status.Store {
		return status.NewStore(conn, "public", "outbox_delivery", status.Pauses("public", migrations.PauseTable, "cdc_relay"), status.Publisher(publisher))
	}
	f := &fakeRelay{rows: []status.Row{{ID: 1, Status: status.Failed, Topic: "orders"}},
		stores: map[string]*status.Store{status.KafkaPublisher: store(status.KafkaPublisher), "partner": store("partner")}}
	ts := serve(t, f, "", true)
	tests := []struct {
		name, method, path string
		code               int
		says               []string // each in the body
		rows               string   // the status table after, "id:publisher:status" by id
		pauses             string   // the pause table's (topic, publisher) after
		kafkaPaused        bool     // orders is paused in the fake relay, after
	}{
		{name: "list the partner's", method: "GET", path: "/failed?publisher=partner&state=dead", code: 200,
			says: []string{`"id": 2,`, `"publisher": "partner"`}},
		{name: "a name that is not one", method: "GET", path: "/failed?publisher=Partner", code: 400, says: []string{`publisher \"Partner\": want a lowercase letter`}},
		{name: "an empty name", method: "GET", path: "/failed?publisher=", code: 400, says: []string{"?publisher= is empty"}},
		{name: "not the relay's", method: "GET", path: "/failed?publisher=analytics", code: 400, says: []string{"not one of the relay's publishers"}},
		{name: "retry Kafka's as the partner's", method: "POST", path: "/failed/1/retry?publisher=partner", code: 404,
			says: []string{"id 1 is Kafka's: leave ?publisher= out"}},
		{name: "retry the partner's as Kafka's", method: "POST", path: "/failed/2/retry", code: 404,
			says: []string{"id 2 is the webhook publisher partner's: add ?publisher=partner"}},
		{name: "retry the partner's to a topic", method: "POST", path: "/failed/2/retry?publisher=partner&topic=orders.fixed", code: 200,
			says: []string{`"id": 2,`, `"was": "DEAD"`, `"topic": "orders.fixed"`, `"publisher": "partner"`}, rows: "1:kafka:FAILED 2:partner:FAILED 3:partner:PAUSED"},
		{name: "retry the partner's to its topic again", method: "POST", path: "/failed/2/retry?publisher=partner&topic=orders.fixed", code: 400,
			says: []string{`id 2 is already for topic \"orders.fixed\"`}},
		{name: "retry the partner's", method: "POST", path: "/failed/2/retry?publisher=partner", code: 200,
			says: []string{`"id": 2,`, `"was": "FAILED"`, `"publisher": "partner"`}},
		{name: "pause the partner's topic", method: "POST", path: "/pause?topic=orders&publisher=partner", code: 200,
			says: []string{`"topic": "orders"`, `"publisher": "partner"`, `"paused": true`, `"changed": true`}, pauses: "orders:partner"},
		{name: "pause Kafka's topic", method: "POST", path: "/pause?topic=orders&publisher=kafka", code: 200,
			says: []string{`"changed": true`}, pauses: "orders:partner", kafkaPaused: true},
		{name: "resume the partner's topic", method: "POST", path: "/resume?topic=orders&publisher=partner", code: 200,
			says: []string{`"publisher": "partner"`, `"paused": false`, `"changed": true`}, rows: "1:kafka:FAILED 2:partner:FAILED 3:partner:WAITING", kafkaPaused: true},
		{name: "a publisher without a topic", method: "POST", path: "/pause?publisher=partner", code: 400,
			says: []string{"?publisher= names whose events of a topic to pause: add ?topic="}, kafkaPaused: true},
	}
	rows := "1:kafka:FAILED 2:partner:DEAD 3:partner:PAUSED"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, ts, tt.method, tt.path, "")
			if code != tt.code {
				t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, code, body, tt.code)
			}
			for _, s := range tt.says {
				if !strings.Contains(body, s) {
					t.Errorf("%s %s: %s, want it to say %s", tt.method, tt.path, body, s)
				}
			}
			if tt.rows != "" {
				rows = tt.rows
			}
			var gotRows, gotPauses string
			if err := conn.QueryRow(ctx, "SELECT string_agg(id || ':' || publisher || ':' || status, ' ' ORDER BY id) FROM outbox_delivery").Scan(&gotRows); err != nil {
				t.Fatal(err)
			}
			if err := conn.QueryRow(ctx, "SELECT coalesce(string_agg(topic || ':' || publisher, ' '), '') FROM cdc_relay_paused_topics").Scan(&gotPauses); err != nil {
				t.Fatal(err)
			}
			if gotRows != rows || gotPauses != tt.pauses || f.topics["orders"] != tt.kafkaPaused {
				t.Errorf("%s %s: rows %q, pauses %q, Kafka's orders paused %v; want %q, %q, %v",
					tt.method, tt.path, gotRows, gotPauses, f.topics["orders"], rows, tt.pauses, tt.kafkaPaused)
			}
		})
	}
	// FAILED by default, as Kafka's; the relay's Kafka list is not asked.
	code, body := do(t, ts, "GET", "/failed?publisher=partner", "")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(body), &listed); code != http.StatusOK || err != nil || len(listed) != 1 || listed[0]["id"] != 2.0 || f.listed.Limit != 0 {
		t.Errorf("GET /failed?publisher=partner: %d %s, want id 2 alone; the relay listed %+v", code, body, f.listed)
	}
	f.down = true
	if code, body := do(t, ts, "POST", "/pause?topic=orders&publisher=partner", ""); code != http.StatusServiceUnavailable {
		t.Errorf("POST /pause?topic=orders&publisher=partner before the relay connected: %d %s, want 503", code, body)
	}
}
