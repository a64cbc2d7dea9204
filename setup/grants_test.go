package setup

import (
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// TestGrantsDeleteOnlyWithRetention: the printed SQL grants DELETE on the
// outbox table only when retention deletes its rows, and says so either
// way; it sets no password and says where one goes; its pg_hba.conf advice
// names the database's lines, not the replication keyword's; for a table
// with adopt (its own or a route's), it says the predicate's tables need
// SELECT.
func TestGrantsDeleteOnlyWithRetention(t *testing.T) {
	t.Parallel()
	ob := outbox.Table{Mapping: decoder.DefaultMapping()}
	appEvents := outbox.Table{Mapping: decoder.DefaultMapping()}
	appEvents.Mapping.Schema, appEvents.Mapping.Table = "app", "events"
	adopting := ob
	adopting.Adopt = "id > (SELECT last_position FROM progress)"
	routeAdopting := ob.Clone()
	routeAdopting.Mapping.Routes = []decoder.Route{{Topic: "t", RequiredTags: []string{"k"}}}
	routeAdopting.RouteAdopt = []string{"id > (SELECT last_position FROM topic_progress WHERE topic = 't')"}
	tests := []struct {
		name      string
		tables    []outbox.Table
		retention bool
		want      []string
		absent    []string
	}{
		{name: "retention on", tables: []outbox.Table{ob}, retention: true,
			want:   []string{`GRANT SELECT, DELETE ON "public"."outbox" TO "relay";`, "DELETE for retention"},
			absent: []string{"No DELETE"}},
		{name: "retention off", tables: []outbox.Table{appEvents, ob},
			want: []string{`GRANT SELECT ON "app"."events" TO "relay";`, `No DELETE: the relay deletes none of its rows unless`,
				`GRANT DELETE ON "app"."events" TO "relay")`, `GRANT SELECT ON "public"."outbox" TO "relay";`},
			absent: []string{"DELETE ON \"app\".\"events\" TO \"relay\";", "SELECT, DELETE ON \"public\".\"outbox\"", "adopt:"}},
		{name: "adopt", tables: []outbox.Table{adopting}, retention: true,
			want: []string{`-- adopt: of "public"."outbox": when the first run creates the slot`, `SELECT on the tables your adopt: predicate reads`,
				`GRANT SELECT ON <table> TO "relay";`}},
		{name: "a route's adopt", tables: []outbox.Table{routeAdopting}, retention: true,
			want: []string{`-- adopt: of "public"."outbox": when the first run creates the slot`, `GRANT SELECT ON <table> TO "relay";`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaultConfig()
			rc.Tables = tc.tables
			if !tc.retention {
				rc.DeleteOutbox = false
			}
			sql := Grants(rc, "relay")
			common := []string{`-c '\password "relay"'`, "It sets no password", `host <database> "relay" <address>`,
				"not the `replication` keyword's, which are for physical replication only"}
			for _, w := range append(common, tc.want...) {
				if !strings.Contains(sql, w) {
					t.Errorf("the SQL lacks %q:\n%s", w, sql)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(sql, a) {
					t.Errorf("the SQL has %q:\n%s", a, sql)
				}
			}
			for _, line := range strings.Split(sql, "\n") {
				if strings.Contains(line, "PASSWORD") && !strings.HasPrefix(line, "--") {
					t.Errorf("a statement sets a password: %q", line)
				}
			}
		})
	}
}
