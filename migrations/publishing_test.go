package migrations

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestLookupPublicationStamp: each change of what a publication publishes
// of the outbox table shows in its facts while it lasts, and in the stamp
// even once undone; changes beside the table, and freezing, leave the
// stamp as it was.
func TestLookupPublicationStamp(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := Apply(ctx, conn, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	const allButID = "aggregate_type, aggregate_id, event_type, topic, payload, headers, created_at"
	tests := []struct {
		name    string
		since   int      // the server version it needs
		what    string   // in ChangedSince after the undo
		change  []string // {p} is the case's publication, {o} a table of its own in it
		check   func(Publication) string
		undo    []string
		changed bool // the stamp after the undo differs from before
	}{
		{"publish update", 0, "own row", []string{"ALTER PUBLICATION {p} SET (publish = 'update')"},
			func(p Publication) string { return fmt.Sprintf("inserts %v", p.Inserts) },
			[]string{"ALTER PUBLICATION {p} SET (publish = 'insert')"}, true},
		{"row filter", 150000, "entry in it", []string{"ALTER PUBLICATION {p} SET TABLE outbox WHERE (event_type <> 'X'), {o}"},
			func(p Publication) string { return "filter " + p.RowFilter },
			[]string{"ALTER PUBLICATION {p} SET TABLE outbox, {o}"}, true},
		{"column list without id", 150000, "entry in it", []string{"ALTER PUBLICATION {p} SET TABLE outbox (" + allButID + "), {o}"},
			func(p Publication) string { return fmt.Sprintf("columns %v hidden %v", p.Columns, p.Hidden) },
			[]string{"ALTER PUBLICATION {p} SET TABLE outbox, {o}"}, true},
		{"removed and added back", 0, "entry in it", []string{"ALTER PUBLICATION {p} DROP TABLE outbox"},
			func(p Publication) string { return fmt.Sprintf("has table %v", p.HasTable) },
			[]string{"ALTER PUBLICATION {p} ADD TABLE outbox"}, true},
		{"another table added", 0, "", []string{"CREATE TABLE {o}_more (n int)", "ALTER PUBLICATION {p} ADD TABLE {o}_more"}, nil, nil, false},
		{"another table removed", 0, "", []string{"ALTER PUBLICATION {p} DROP TABLE {o}"}, nil, nil, false},
		{"another table dropped", 0, "", []string{"DROP TABLE {o}"}, nil, nil, false},
		{"frozen", 0, "", []string{"VACUUM (FREEZE) pg_publication", "VACUUM (FREEZE) pg_publication_rel"}, nil, nil, false},
	}
	wantDuring := map[string]string{
		"publish update":         "inserts false",
		"row filter":             "filter (event_type <> 'X'::text)",
		"column list without id": "columns [" + strings.ReplaceAll(allButID, ",", "") + "] hidden [id]",
		"removed and added back": "has table false",
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if version < tt.since {
				t.Skipf("PostgreSQL %d has no such publication option", version)
			}
			pub, other := fmt.Sprintf("pub_%d", i), fmt.Sprintf("other_%d", i)
			names := strings.NewReplacer("{p}", pub, "{o}", other)
			exec := func(sqls ...string) {
				t.Helper()
				for _, sql := range sqls {
					if _, err := conn.Exec(ctx, names.Replace(sql)); err != nil {
						t.Fatalf("%s: %v", names.Replace(sql), err)
					}
				}
			}
			exec("CREATE TABLE {o} (n int)", "CREATE PUBLICATION {p} FOR TABLE outbox, {o} WITH (publish = 'insert')")
			cfg := DefaultConfig()
			cfg.Publication = pub
			look := func() Publication {
				t.Helper()
				p, err := LookupPublication(ctx, conn, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			before := look()
			if !before.HasTable || !before.Inserts || before.RowFilter != "" || before.Columns != nil || before.Hidden != nil || before.Stamp == "" {
				t.Fatalf("before the change: %+v; want the table, inserts, no filter, every column, a stamp", before)
			}
			exec(tt.change...)
			during := look()
			if tt.check != nil {
				if got := tt.check(during); got != wantDuring[tt.name] {
					t.Errorf("during the change: %s, want %s", got, wantDuring[tt.name])
				}
			}
			exec(tt.undo...)
			after := look()
			if tt.changed != (after.Stamp != before.Stamp) || tt.changed != (during.Stamp != before.Stamp) {
				t.Fatalf("stamps before %q, during %q, after %q; want changed %v", before.Stamp, during.Stamp, after.Stamp, tt.changed)
			}
			if got := after.ChangedSince(before.Stamp); tt.what == "" && got != "" || !strings.Contains(got, tt.what) || strings.Contains(got, ", and ") {
				t.Errorf("ChangedSince: %q, want %q", got, tt.what)
			}
			if !after.HasTable || !after.Inserts || after.RowFilter != "" || after.Columns != nil {
				t.Fatalf("after the undo: %+v; want the table, inserts, no filter, every column", after)
			}
		})
	}
}

// TestLookupPublicationOfSchema: a publication of the table's schema (or
// of all tables) has no row of the table; a row filter of the table's own
// entry, which PostgreSQL then ignores, is not reported.
func TestLookupPublicationOfSchema(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := Apply(ctx, conn, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 150000 {
		t.Skipf("PostgreSQL %d has no schema publications", version)
	}
	for _, sql := range []string{
		"CREATE PUBLICATION filtered FOR TABLE outbox WHERE (event_type <> 'X') WITH (publish = 'insert')",
		"ALTER PUBLICATION filtered ADD TABLES IN SCHEMA public",
		"CREATE PUBLICATION everything FOR ALL TABLES",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	stamps := map[string]bool{}
	for _, pub := range []string{"filtered", "everything"} {
		cfg := DefaultConfig()
		cfg.Publication = pub
		p, err := LookupPublication(ctx, conn, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !p.HasTable || !p.Inserts || p.RowFilter != "" || p.Columns != nil || stamps[p.Stamp] || p.Stamp == "" {
			t.Fatalf("%s: %+v; want the table, inserts, no filter applied, every column, a stamp of its own", pub, p)
		}
		stamps[p.Stamp] = true
	}
}
