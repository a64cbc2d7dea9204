package backfill

import (
	"strings"
	"testing"
)

// TestKeyText: --after's text of a key, and back.
func TestKeyText(t *testing.T) {
	t.Parallel()
	one := Key{Columns: []string{"id"}, Types: []string{"bigint"}}
	two := Key{Columns: []string{"stream", "position"}, Types: []string{"text", "bigint"}}
	for _, tc := range []struct {
		key    Key
		values []string
		text   string
	}{
		{one, []string{"42"}, "42"},
		{one, []string{`a "quoted", key`}, `a "quoted", key`},
		{two, []string{"orders", "4000"}, `["orders","4000"]`},
		{two, []string{`a,"b"`, "1"}, `["a,\"b\"","1"]`},
	} {
		if got := FormatKey(tc.values); got != tc.text {
			t.Errorf("FormatKey(%q) = %q, want %q", tc.values, got, tc.text)
		}
		back, err := tc.key.ParseKey(tc.text)
		if err != nil || strings.Join(back, "\x00") != strings.Join(tc.values, "\x00") {
			t.Errorf("ParseKey(%q) = %q, %v", tc.text, back, err)
		}
	}
	for _, bad := range []string{"4000", `["orders"]`, `["a","b","c"]`, `[1,2]`} {
		if _, err := two.ParseKey(bad); err == nil || !strings.Contains(err.Error(), "JSON array of 2 strings") {
			t.Errorf("ParseKey(%q) = %v, want an error that says what it wants", bad, err)
		}
	}
}

// TestQuerySQL: the predicate in a subquery of its own, on lines of its
// own, the key's conditions outside it; the batches page over the table
// of selected keys.
func TestQuerySQL(t *testing.T) {
	t.Parallel()
	q := query{table: `"public"."outbox"`, where: "created_at > now() - interval '1 hour' -- recent", key: Key{Columns: []string{"stream", "pos"}, Types: []string{"text", "bigint"}}}
	const sub = "(SELECT * FROM \"public\".\"outbox\" WHERE (\ncreated_at > now() - interval '1 hour' -- recent\n)) s"
	const ins = "INSERT INTO pg_temp.cdc_relay_backfill_keys SELECT \"stream\", \"pos\" FROM " + sub
	const join = "SELECT t.* FROM (SELECT \"stream\", \"pos\" FROM pg_temp.cdc_relay_backfill_keys ORDER BY \"stream\", \"pos\" LIMIT $1) k JOIN \"public\".\"outbox\" t ON (t.\"stream\", t.\"pos\") = (k.\"stream\", k.\"pos\")"
	for _, tc := range []struct{ got, want string }{
		{q.keys(false), ins + " ORDER BY \"stream\", \"pos\" LIMIT $1"},
		{q.keys(true), ins + " WHERE (\"stream\", \"pos\") > ($1::text, $2::bigint) ORDER BY \"stream\", \"pos\" LIMIT $3"},
		{q.batch(false), join + " ORDER BY k.\"stream\", k.\"pos\""},
		{q.batch(true), strings.Replace(join, " ORDER BY \"stream\", \"pos\" LIMIT $1", " WHERE (\"stream\", \"pos\") > ($1::text, $2::bigint) ORDER BY \"stream\", \"pos\" LIMIT $3", 1) + " ORDER BY k.\"stream\", k.\"pos\""},
		{q.pageEnd(true), "SELECT \"stream\", \"pos\" FROM (SELECT \"stream\", \"pos\" FROM pg_temp.cdc_relay_backfill_keys WHERE (\"stream\", \"pos\") > ($1::text, $2::bigint) ORDER BY \"stream\", \"pos\" LIMIT $3) p ORDER BY \"stream\" DESC, \"pos\" DESC LIMIT 1"},
	} {
		if tc.got != tc.want {
			t.Errorf("got\n%s\nwant\n%s", tc.got, tc.want)
		}
	}
}
