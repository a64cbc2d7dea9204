package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Key is the column list a backfill pages by: the table's primary key, in
// index order.
type Key struct {
	// Columns are the key's column names.
	Columns []string
	// Types are their types as format_type names them ("bigint", "uuid",
	// "text", …), the casts of a key's text in a query.
	Types []string
}

// ErrNoKey says a table has no primary key to page by.
var ErrNoKey = errors.New("the table has no primary key")

// primaryKey is the primary key's columns and types of table ($1, a
// quoted name), in index order.
const primaryKey = `SELECT a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_index i
JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = $1::regclass AND i.indisprimary
ORDER BY k.n`

// LookupKey returns table's primary key, or an error wrapping [ErrNoKey]
// that says how to add one on idColumn, the mapping's event id column
// (a column of its own when idColumn is empty). A partitioned table's
// primary key is its root's.
func LookupKey(ctx context.Context, q pgdb.Querier, table, idColumn string) (Key, error) {
	rows, err := q.Query(ctx, primaryKey, table)
	if err != nil {
		return Key{}, fmt.Errorf("look up the primary key of %s: %w", table, err)
	}
	var k Key
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return Key{}, fmt.Errorf("look up the primary key of %s: %w", table, err)
		}
		k.Columns, k.Types = append(k.Columns, name), append(k.Types, typ)
	}
	if err := rows.Err(); err != nil {
		return Key{}, fmt.Errorf("look up the primary key of %s: %w", table, err)
	}
	if len(k.Columns) == 0 {
		return Key{}, fmt.Errorf("%s: %w: backfill reads rows in key order, a batch at a time; add one (%s)", table, ErrNoKey, addPrimaryKey(table, idColumn))
	}
	return k, nil
}

// addPrimaryKey is the statement that gives table a primary key on
// idColumn, its event id column, which the relay's mapping names (one
// of the table's unique columns, named in angle brackets, without it).
func addPrimaryKey(table, idColumn string) string {
	col := "<a unique column>"
	if idColumn != "" {
		col = pgx.Identifier{idColumn}.Sanitize()
	}
	return "ALTER TABLE " + table + " ADD PRIMARY KEY (" + col + ")"
}

// quoted returns the key's columns quoted and joined: "a", "b".
func (k Key) quoted() string {
	qs := make([]string, len(k.Columns))
	for i, c := range k.Columns {
		qs[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(qs, ", ")
}

// FormatKey is the text of a key's values as --after takes it: a
// one-column key's value as it is, a composite key's values as a JSON
// array of strings.
func FormatKey(values []string) string {
	if len(values) == 1 {
		return values[0]
	}
	b, _ := json.Marshal(values) // strings always marshal
	return string(b)
}

// ParseKey is the inverse of [FormatKey] for k: the values of s, one per
// column of k.
func (k Key) ParseKey(s string) ([]string, error) {
	if len(k.Columns) == 1 {
		return []string{s}, nil
	}
	var values []string
	if err := json.Unmarshal([]byte(s), &values); err != nil || len(values) != len(k.Columns) {
		return nil, fmt.Errorf("the key (%s) has %d columns: give --after as a JSON array of %d strings, such as %s",
			strings.Join(k.Columns, ", "), len(k.Columns), len(k.Columns), FormatKey(make([]string, len(k.Columns))))
	}
	return values, nil
}
