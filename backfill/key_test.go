package backfill

import (
	"strings"
	"testing"
)

// TestKeyText: --after's text of a key, and back.
func TestKeyText(t *testing.T) {
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

// TestQuerySQL: keyset pagination between the keys, the predicate on
// lines of its own.
func TestQuerySQL(t *testing.T) {
	q := query{table: `"public"."outbox"`, where: "created_at > now() - interval '1 hour' -- recent", key: Key{Columns: []string{"stream", "pos"}, Types: []string{"text", "bigint"}}}
	const from = "FROM \"public\".\"outbox\" WHERE (\ncreated_at > now() - interval '1 hour' -- recent\n)"
	after, upTo, both := q, q, q
	after.after, upTo.upTo, both.after, both.upTo = true, true, true, true
	for _, tc := range []struct{ got, want string }{
		{q.batch(), "SELECT * " + from + " ORDER BY \"stream\", \"pos\" LIMIT $1"},
		{after.batch(), "SELECT * " + from + " AND (\"stream\", \"pos\") > ($1::text, $2::bigint) ORDER BY \"stream\", \"pos\" LIMIT $3"},
		{upTo.batch(), "SELECT * " + from + " AND (\"stream\", \"pos\") <= ($1::text, $2::bigint) ORDER BY \"stream\", \"pos\" LIMIT $3"},
		{both.batch(), "SELECT * " + from + " AND (\"stream\", \"pos\") > ($1::text, $2::bigint) AND (\"stream\", \"pos\") <= ($3::text, $4::bigint) ORDER BY \"stream\", \"pos\" LIMIT $5"},
		{both.count(), "SELECT count(*) " + from + " AND (\"stream\", \"pos\") > ($1::text, $2::bigint) AND (\"stream\", \"pos\") <= ($3::text, $4::bigint)"},
		{after.edge(true), "SELECT \"stream\", \"pos\" " + from + " AND (\"stream\", \"pos\") > ($1::text, $2::bigint) ORDER BY \"stream\" DESC, \"pos\" DESC LIMIT 1"},
	} {
		if tc.got != tc.want {
			t.Errorf("got\n%s\nwant\n%s", tc.got, tc.want)
		}
	}
}
