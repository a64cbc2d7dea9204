package audit

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// pg is the package's PostgreSQL: each test has a database of its own.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// TestReadRows: the rows' reader decodes each row with the table's
// mapping (topic column, else the template; the key; the id header as
// its converter writes it), reads the order from an integer primary key
// by default, from --order-column when given, none from a uuid key, and
// selects the range of --since/--until and --from-id/--to-id; an order
// column of another type is refused with what to give.
func TestReadRows(t *testing.T) {
	ctx, db, conn := pg.ConnectDB(t, time.Minute,
		`CREATE TABLE ob (id bigserial PRIMARY KEY, agg text NOT NULL, k text, topic text, payload jsonb NOT NULL, created_at timestamptz NOT NULL, note text)`,
		`INSERT INTO ob (agg, k, topic, payload, created_at, note) VALUES
			('A', 'k1', NULL, '{"big": 1}', '2026-11-30T08:00:00Z', 'x'),
			('A', NULL, 'elsewhere', '{}', '2026-11-30T08:01:00Z', 'x'),
			('B', 'k1', NULL, '{}', '2026-11-30T08:02:00Z', 'x')`,
		`CREATE TABLE obu (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), agg text NOT NULL, k text, payload jsonb NOT NULL)`,
		`INSERT INTO obu (agg, k, payload) VALUES ('A', 'k', '{}')`)
	_ = conn
	m := decoder.Mapping{Schema: "public", Table: "ob", IDColumn: "id", KeyColumn: "k", PayloadColumn: "payload", TopicColumn: "topic",
		TimestampColumn: "created_at", TopicTemplate: "t.{agg}", HeaderConverter: decoder.ConverterJSON}
	read := func(cfg Config) ([]Row, string, error) {
		cfg.PostgresURL, cfg.Batch = db.URL(), 2
		if cfg.Mapping.Table == "" {
			cfg.Mapping = m
		}
		r, err := openRows(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer r.close()
		var rows []Row
		err = r.ReadRows(ctx, func(row Row) {
			row.ID, row.Key = append([]byte(nil), row.ID...), append([]byte(nil), row.Key...)
			row.Topics = append([]string(nil), row.Topics...)
			rows = append(rows, row)
		})
		return rows, r.order, err
	}
	rows, order, err := read(Config{})
	if err != nil || order != "id" || len(rows) != 3 {
		t.Fatalf("rows %+v, order %q, err %v", rows, order, err)
	}
	want := []Row{
		{ID: []byte("1"), Key: []byte("k1"), Topics: []string{"t.A"}, Order: 1, HasOrder: true},
		{ID: []byte("2"), KeyNull: true, Topics: []string{"elsewhere"}, Order: 2, HasOrder: true},
		{ID: []byte("3"), Key: []byte("k1"), Topics: []string{"t.B"}, Order: 3, HasOrder: true},
	}
	for i, r := range rows {
		w := want[i]
		if string(r.ID) != string(w.ID) || string(r.Key) != string(w.Key) || r.KeyNull != w.KeyNull || strings.Join(r.Topics, ",") != strings.Join(w.Topics, ",") ||
			r.Order != w.Order || r.HasOrder != w.HasOrder || r.Poison != "" {
			t.Errorf("row %d: %+v, want %+v", i, r, w)
		}
	}
	rows, order, err = read(Config{Since: time.Date(2026, 11, 30, 8, 1, 0, 0, time.UTC), Until: time.Date(2026, 11, 30, 8, 2, 0, 0, time.UTC), OrderColumn: "created_at"})
	if err != nil || order != "created_at" || len(rows) != 1 || string(rows[0].ID) != "2" || rows[0].Order != time.Date(2026, 11, 30, 8, 1, 0, 0, time.UTC).UnixMicro() {
		t.Errorf("a time window: rows %+v, order %q, err %v", rows, order, err)
	}
	if rows, _, err = read(Config{FromID: "2", ToID: "3", OrderColumn: OrderNone}); err != nil || len(rows) != 2 || rows[0].HasOrder {
		t.Errorf("an id range: rows %+v, err %v", rows, err)
	}
	if _, _, err = read(Config{OrderColumn: "note"}); err == nil || !strings.Contains(err.Error(), "--order-column note is of type text: give an integer column") {
		t.Errorf("a text order column: %v", err)
	}
	mu := decoder.Mapping{Schema: "public", Table: "obu", IDColumn: "id", KeyColumn: "k", PayloadColumn: "payload", TopicTemplate: "t.{agg}"}
	if rows, order, err = read(Config{Mapping: mu}); err != nil || order != "" || len(rows) != 1 || rows[0].HasOrder {
		t.Errorf("a uuid key: rows %+v, order %q, err %v", rows, order, err)
	}
}
