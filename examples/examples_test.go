package examples

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"

	relayconfig "github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// example is what one directory's app.sql must leave behind, and what its
// relay.yaml must make of it.
type example struct {
	dir string
	// rows is the number of rows each table holds after app.sql.
	rows map[string]int
	// txs is the number of transactions that insert outbox rows; each of
	// them also writes a business table unless alone is set (an event log
	// is its own business data).
	txs   int
	alone bool
	// topics counts the records the published inserts make, per topic
	// (an event that matches two routes counts on both); unrouted counts
	// the events no route takes.
	topics   map[string]int
	unrouted int
}

var examples = []example{
	{
		dir:  "notification-outbox",
		rows: map[string]int{"public.deals": 1, "public.notification_outbox": 5},
		txs:  3,
		topics: map[string]int{
			"notifications.deal-assigned":      1,
			"notifications.deal-stage-changed": 2,
			"notifications.deal-won":           2,
		},
	},
	{
		dir:    "order-service-outbox",
		rows:   map[string]int{"public.orders": 2, "public.outbox": 3},
		txs:    3,
		topics: map[string]int{"order-events": 3},
	},
	{
		dir:    "publisher-worker-outbox",
		rows:   map[string]int{"public.conversations": 1, "public.messages": 2, "public.outbox": 3},
		txs:    3,
		topics: map[string]int{"chat.conversations": 1, "chat.messages": 2},
	},
	{
		dir:    "logistics-outbox",
		rows:   map[string]int{"public.orders": 1, "public.shipments": 1, "public.outbox_events": 4},
		txs:    3,
		topics: map[string]int{"logistics.Order": 2, "logistics.Shipment": 2},
	},
	{
		dir:      "event-store-tags",
		rows:     map[string]int{"public.events": 6},
		txs:      3,
		alone:    true,
		topics:   map[string]int{"wallet-events": 5, "payment-events": 1},
		unrouted: 1,
	},
	{
		// The third transaction deletes its outbox row again: the table
		// keeps two rows, the publication carries three inserts.
		dir:    "debezium-outbox",
		rows:   map[string]int{"public.customers": 1, "public.purchase_orders": 1, "public.outboxevent": 2},
		txs:    3,
		topics: map[string]int{"outbox.event.customer": 1, "outbox.event.order": 2},
	},
}

// The types the relay reads in each role (issue 17: values jsonb, json,
// text, varchar, bytea; ids and keys uuid, text, bigint).
var (
	idTypes        = []string{"uuid", "text", "varchar", "int8"}
	valueTypes     = []string{"jsonb", "json", "text", "varchar", "bytea"}
	timestampTypes = []string{"timestamptz", "timestamp", "int8"}
	tagsTypes      = []string{"_text", "jsonb"}
	textTypes      = []string{"text", "varchar"}
	attemptsTypes  = []string{"int2", "int4", "int8", "numeric"}
)

var (
	templateColumn = regexp.MustCompile(`\{([^{}]*)\}`)
	legalTopic     = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)
)

// pg is the package's PostgreSQL: each example is checked in a database
// of its own on it.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// TestExamples checks each example in turn: not side by side, since the
// slots the examples name are the cluster's and may be the same.
func TestExamples(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dirs, err := filepath.Glob("*/relay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != len(examples) {
		t.Errorf("%d directories hold a relay.yaml, %d are tested: add the new one to examples", len(dirs), len(examples))
	}
	for _, ex := range examples {
		t.Run(ex.dir, func(t *testing.T) {
			conn, err := pgx.Connect(ctx, pg.DB(t).URL())
			if err != nil {
				t.Fatal(err)
			}
			// Closed after checkExample's cleanup has dropped the slot.
			t.Cleanup(func() { conn.Close(context.Background()) })
			checkExample(ctx, t, conn, ex)
		})
	}
}

// config is what the test reads of a relay.yaml: the keys of issue 17, read
// loosely: checking its shape is the config package's job.
type config struct {
	slot, publication string
	tables            []map[string]any
}

func readConfig(t *testing.T, path string) config {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	// The relay's own reading of it: every key known, every rule kept.
	if _, err := relayconfig.Load(path); err != nil {
		t.Errorf("cdc-relay would refuse %s: %v", path, err)
	}
	if _, ok := doc["postgres_url"]; ok {
		t.Errorf("%s sets postgres_url: leave it to CDC_RELAY_POSTGRES_URL", path)
	}
	kafka, _ := doc["kafka"].(map[string]any)
	if brokers, _ := kafka["brokers"].([]any); len(brokers) == 0 {
		t.Errorf("%s: kafka.brokers is empty", path)
	}
	c := config{slot: str(doc, "slot"), publication: str(doc, "publication")}
	if c.slot == "" || c.publication == "" {
		t.Fatalf("%s: slot and publication must be set", path)
	}
	tables, _ := doc["tables"].([]any)
	for _, tb := range tables {
		m, ok := tb.(map[string]any)
		if !ok {
			t.Fatalf("%s: a tables entry is %T, not a mapping", path, tb)
		}
		c.tables = append(c.tables, m)
	}
	if len(c.tables) == 0 {
		t.Fatalf("%s: no tables", path)
	}
	return c
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func strs(m map[string]any, key string) []string {
	var out []string
	l, _ := m[key].([]any)
	for _, v := range l {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func checkExample(ctx context.Context, t *testing.T, conn *pgx.Conn, ex example) {
	cfg := readConfig(t, filepath.Join(ex.dir, "relay.yaml"))
	schema, err := os.ReadFile(filepath.Join(ex.dir, "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile(filepath.Join(ex.dir, "app.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(schema)); err != nil {
		t.Fatalf("schema.sql: %v", err)
	}

	// The relay's publication (inserts of the outbox tables), and one of
	// everything to see which tables each transaction writes.
	var outboxes []string
	for _, tb := range cfg.tables {
		schema, table, err := decoder.ParseTable(str(tb, "table"))
		if err != nil {
			t.Fatal(err)
		}
		outboxes = append(outboxes, pgx.Identifier{schema, table}.Sanitize())
	}
	for _, sql := range []string{
		fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert')",
			pgx.Identifier{cfg.publication}.Sanitize(), strings.Join(outboxes, ", ")),
		"CREATE PUBLICATION test_everything FOR ALL TABLES",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", cfg.slot); err != nil {
		t.Fatalf("slot %q: %v", cfg.slot, err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", cfg.slot); err != nil {
			t.Errorf("dropping slot %s: %v", cfg.slot, err)
		}
	})

	if _, err := conn.Exec(ctx, string(app)); err != nil {
		t.Fatalf("app.sql: %v", err)
	}

	for table, want := range ex.rows {
		var got int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s holds %d rows after app.sql, want %d", table, got, want)
		}
	}

	relay := readSlot(ctx, t, conn, cfg.slot, cfg.publication, true)
	checkTransactions(ctx, t, conn, ex, cfg, outboxes)
	if relay.others > 0 {
		t.Errorf("publication %s sent %d updates or deletes; want inserts only", cfg.publication, relay.others)
	}

	topics := map[string]int{}
	unrouted := 0
	for _, tb := range cfg.tables {
		name := str(tb, "table")
		schema, table, _ := decoder.ParseTable(name)
		rel, ok := relay.relation(schema, table)
		if !ok {
			t.Errorf("%s: the publication sent no insert of it", name)
			continue
		}
		checkColumns(ctx, t, conn, name, tb, rel)
		checkWriteBack(ctx, t, conn, pgx.Identifier{schema, table}.Sanitize(), tb)
		for _, row := range relay.inserts[rel.RelationID] {
			to := recordTopics(ctx, t, conn, tb, row)
			for _, topic := range to {
				if !legalTopic.MatchString(topic) || topic == "." || topic == ".." {
					t.Errorf("%s: topic %q is not a legal Kafka topic name", name, topic)
				}
				topics[topic]++
			}
			if tb["routes"] != nil && len(to) == 0 {
				unrouted++
			}
			if v, ok := row[str(tb, "key")]; ok && v == nil {
				t.Errorf("%s: a row has a null key (%s)", name, str(tb, "key"))
			}
			if v, ok := row[str(tb, "value")]; ok && v == nil {
				t.Errorf("%s: a row has a null value (%s)", name, str(tb, "value"))
			}
		}
	}
	if !maps.Equal(topics, ex.topics) {
		t.Errorf("records per topic: %v, want %v", topics, ex.topics)
	}
	if unrouted != ex.unrouted {
		t.Errorf("%d events match no route, want %d", unrouted, ex.unrouted)
	}
}

// changes is what a slot sent: relations by id, and the inserted rows of
// each (column name → text value, nil for NULL).
type changes struct {
	relations map[uint32]*pglogrepl.RelationMessage
	inserts   map[uint32][]map[string]*string
	// txs lists, per transaction, the relations it inserted into, updated or
	// deleted from.
	txs [][]uint32
	// others counts updates and deletes.
	others int
}

func (c changes) relation(schema, table string) (*pglogrepl.RelationMessage, bool) {
	for _, r := range c.relations {
		if r.Namespace == schema && r.RelationName == table {
			return r, true
		}
	}
	return nil, false
}

// readSlot reads what the slot holds through a publication, as the relay
// would (peek leaves it there for another publication's reading).
func readSlot(ctx context.Context, t *testing.T, conn *pgx.Conn, slot, publication string, peek bool) changes {
	t.Helper()
	fn := "pg_logical_slot_get_binary_changes"
	if peek {
		fn = "pg_logical_slot_peek_binary_changes"
	}
	rows, err := conn.Query(ctx, "SELECT data FROM "+fn+"($1, NULL, NULL, 'proto_version', '1', 'publication_names', $2)", slot, publication)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatalf("reading slot %s with publication %s: %v", slot, publication, err)
	}
	c := changes{relations: map[uint32]*pglogrepl.RelationMessage{}, inserts: map[uint32][]map[string]*string{}}
	var tx []uint32
	for _, b := range msgs {
		m, err := pglogrepl.Parse(b)
		if err != nil {
			t.Fatalf("pgoutput message %q: %v", b[:1], err)
		}
		switch m := m.(type) {
		case *pglogrepl.BeginMessage:
			tx = nil
		case *pglogrepl.CommitMessage:
			if len(tx) > 0 {
				c.txs = append(c.txs, tx)
			}
		case *pglogrepl.RelationMessage:
			c.relations[m.RelationID] = m
		case *pglogrepl.InsertMessage:
			rel := c.relations[m.RelationID]
			row := map[string]*string{}
			for i, col := range m.Tuple.Columns {
				if col.DataType == 't' {
					v := string(col.Data)
					row[rel.Columns[i].Name] = &v
				} else {
					row[rel.Columns[i].Name] = nil
				}
			}
			c.inserts[m.RelationID] = append(c.inserts[m.RelationID], row)
			tx = append(tx, m.RelationID)
		case *pglogrepl.UpdateMessage:
			c.others++
			tx = append(tx, m.RelationID)
		case *pglogrepl.DeleteMessage:
			c.others++
			tx = append(tx, m.RelationID)
		}
	}
	return c
}

// checkTransactions checks that app.sql writes its outbox rows in ex.txs
// transactions, each with a business change unless ex.alone.
func checkTransactions(ctx context.Context, t *testing.T, conn *pgx.Conn, ex example, cfg config, outboxes []string) {
	t.Helper()
	all := readSlot(ctx, t, conn, cfg.slot, "test_everything", false)
	isOutbox := func(id uint32) bool {
		r := all.relations[id]
		return slices.Contains(outboxes, pgx.Identifier{r.Namespace, r.RelationName}.Sanitize())
	}
	n := 0
	for _, tx := range all.txs {
		if !slices.ContainsFunc(tx, isOutbox) {
			continue
		}
		n++
		if !ex.alone && !slices.ContainsFunc(tx, func(id uint32) bool { return !isOutbox(id) }) {
			t.Errorf("a transaction writes the outbox and no business table")
		}
	}
	if n != ex.txs {
		t.Errorf("%d transactions write the outbox, want %d", n, ex.txs)
	}
}

// checkColumns checks that every column the mapping names exists in the
// published relation, with a type the relay reads in that role.
func checkColumns(ctx context.Context, t *testing.T, conn *pgx.Conn, name string, tb map[string]any, rel *pglogrepl.RelationMessage) {
	t.Helper()
	types := map[string]string{}
	for _, col := range rel.Columns {
		var typ string
		if err := conn.QueryRow(ctx, "SELECT typname FROM pg_type WHERE oid = $1", col.DataType).Scan(&typ); err != nil {
			t.Fatal(err)
		}
		types[col.Name] = typ
	}
	check := func(role, col string, want []string) {
		if col == "" {
			return
		}
		typ, ok := types[col]
		switch {
		case !ok:
			t.Errorf("%s: %s column %q is not in the table", name, role, col)
		case want != nil && !slices.Contains(want, typ):
			t.Errorf("%s: %s column %q has type %s, want one of %v", name, role, col, typ, want)
		}
	}
	check("id", str(tb, "id"), idTypes)
	check("key", str(tb, "key"), idTypes)
	if str(tb, "value") == "" {
		t.Errorf("%s: no value column", name)
	}
	check("value", str(tb, "value"), valueTypes)
	check("topic_column", str(tb, "topic_column"), textTypes)
	check("headers_column", str(tb, "headers_column"), []string{"jsonb"})
	check("timestamp", str(tb, "timestamp"), timestampTypes)
	check("tags_column", str(tb, "tags_column"), tagsTypes)
	for _, m := range templateColumn.FindAllStringSubmatch(str(tb, "topic"), -1) {
		check("topic template", m[1], nil)
	}
	headers, _ := tb["headers"].(map[string]any)
	for header, col := range headers {
		s, _ := col.(string)
		check("header "+header, s, nil)
	}
	if wb, ok := tb["write_back"].(map[string]any); ok {
		check("write_back status", str(wb, "status_column"), nil)
		check("write_back delivered_at", str(wb, "delivered_at_column"), []string{"timestamptz", "timestamp"})
		check("write_back error", str(wb, "error_column"), textTypes)
		check("write_back attempts", str(wb, "attempts_column"), attemptsTypes)
		check("write_back next attempt", str(wb, "next_attempt_column"), []string{"timestamptz", "timestamp"})
	}
	if str(tb, "topic") == "" && str(tb, "topic_column") == "" && tb["routes"] == nil {
		t.Errorf("%s: neither topic, topic_column nor routes", name)
	}
}

// checkWriteBack checks, in a transaction it rolls back, that the status
// column accepts the delivered, failed, dead and pending values (a CHECK,
// an enum) with the columns set beside them, that no row is delivered or
// failed yet, and that every row app.sql inserted has one of the pending
// values.
func checkWriteBack(ctx context.Context, t *testing.T, conn *pgx.Conn, table string, tb map[string]any) {
	t.Helper()
	wb, ok := tb["write_back"].(map[string]any)
	if !ok {
		return
	}
	status, id := pgx.Identifier{str(wb, "status_column")}.Sanitize(), pgx.Identifier{str(tb, "id")}.Sanitize()
	delivered, failed, pending := str(wb, "delivered"), str(wb, "failed"), strs(wb, "pending")
	var done, notPending int
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FILTER (WHERE %[2]s::text IN ($1, $2)), count(*) FILTER (WHERE %[2]s::text <> ALL ($3)) FROM %[1]s", table, status),
		delivered, failed, pending).Scan(&done, &notPending); err != nil {
		t.Fatal(err)
	}
	if done != 0 {
		t.Errorf("%s: %d rows are %s or %s before any delivery", table, done, delivered, failed)
	}
	if len(pending) > 0 && notPending != 0 {
		t.Errorf("%s: %d rows app.sql inserted have a status write_back.pending %q does not list", table, notPending, pending)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	// set writes value and each column (a name, then its expression) to
	// two rows.
	set := func(value string, cols ...string) {
		sql := fmt.Sprintf("UPDATE %s SET %s = $1", table, status)
		for i := 0; i+1 < len(cols); i += 2 {
			if cols[i] != "" {
				sql += fmt.Sprintf(", %s = %s", pgx.Identifier{cols[i]}.Sanitize(), cols[i+1])
			}
		}
		res, err := tx.Exec(ctx, sql+fmt.Sprintf(" WHERE %s = ANY (SELECT %s FROM %s LIMIT 2)", id, id, table), value)
		if err != nil {
			t.Fatalf("%s: write-back of %q: %v", table, value, err)
		}
		if res.RowsAffected() == 0 {
			t.Errorf("%s: write-back of %q updated no row", table, value)
		}
	}
	reason := "'UNKNOWN_TOPIC_OR_PARTITION: test'"
	set(delivered, str(wb, "delivered_at_column"), "now()")
	set(failed, str(wb, "error_column"), reason, str(wb, "attempts_column"), "1", str(wb, "next_attempt_column"), "now() + interval '1 minute'")
	if dead := str(wb, "dead"); dead != "" {
		set(dead, str(wb, "error_column"), reason, str(wb, "attempts_column"), "5")
	}
	for _, p := range pending {
		set(p)
	}
}

// recordTopics returns the topics a row goes to: the topic column when set,
// else the topic template filled in, or the topics of the routes it
// matches.
func recordTopics(ctx context.Context, t *testing.T, conn *pgx.Conn, tb map[string]any, row map[string]*string) []string {
	t.Helper()
	if col := str(tb, "topic_column"); col != "" && row[col] != nil {
		return []string{*row[col]}
	}
	if tmpl := str(tb, "topic"); tmpl != "" {
		return []string{templateColumn.ReplaceAllStringFunc(tmpl, func(m string) string {
			v := row[m[1:len(m)-1]]
			if v == nil {
				t.Errorf("topic template %q: %s is null", tmpl, m)
				return ""
			}
			return *v
		})}
	}
	routes, _ := tb["routes"].([]any)
	if len(routes) == 0 {
		return nil
	}
	tags := row[str(tb, "tags_column")]
	if tags == nil {
		return nil
	}
	// The tags' keys, as PostgreSQL reads the text[] ("key=value" or "key").
	var keys []string
	if err := conn.QueryRow(ctx, "SELECT coalesce(array_agg(split_part(tag, '=', 1)), '{}') FROM unnest($1::text[]) AS tag", *tags).Scan(&keys); err != nil {
		t.Fatalf("tags %s: %v", *tags, err)
	}
	var topics []string
	for _, r := range routes {
		route, _ := r.(map[string]any)
		required, anyOf := strs(route, "required_tags"), strs(route, "any_of_tags")
		match := len(required) > 0 || len(anyOf) > 0
		for _, tag := range required {
			match = match && slices.Contains(keys, tag)
		}
		if len(anyOf) > 0 {
			match = match && slices.ContainsFunc(anyOf, func(tag string) bool { return slices.Contains(keys, tag) })
		}
		if match {
			topics = append(topics, str(route, "topic"))
		}
	}
	return topics
}
