package backfill

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// keysTable is the backfill's table of selected keys: a temporary table,
// its session's own, which the server drops when the session ends.
const keysTable = "pg_temp.cdc_relay_backfill_keys"

// query builds the SQL a backfill runs on one table. The user's predicate
// appears in one query only, keys, as the WHERE clause of a subquery of
// its own, on lines of its own: the key's conditions, order and limit
// apply outside it, so that an OR, a trailing -- comment or unbalanced
// parentheses in it cannot reach them. Every other query reads the table
// of selected keys, which the backfill alone writes.
type query struct {
	table string // quoted
	key   Key
	where string // the user's predicate
}

// createKeys creates the empty table of selected keys, with the key's
// columns as the table has them (types and collations, so that it orders
// them as the table does), keyed by them: a key selected twice is an
// error, never a loop.
func (q query) createKeys() []string {
	return []string{
		"CREATE TEMP TABLE " + strings.TrimPrefix(keysTable, "pg_temp.") + " AS SELECT " + q.key.quoted() + " FROM " + q.table + " WITH NO DATA",
		"ALTER TABLE " + keysTable + " ADD PRIMARY KEY (" + q.key.quoted() + ")",
	}
}

// keys copies into the table of selected keys the next chunk of the keys
// the predicate selects: at most n (the last parameter), in key order,
// after the key the first parameters give when after is set. Keyset
// pagination: the key's index finds where a chunk starts.
func (q query) keys(after bool) string {
	s := "INSERT INTO " + keysTable + " SELECT " + q.key.quoted() + " FROM (SELECT * FROM " + q.table + " WHERE (\n" + q.where + "\n)) s"
	n := 1
	if after {
		s += " WHERE (" + q.key.quoted() + ") > (" + q.params(1) + ")"
		n += len(q.key.Columns)
	}
	return s + q.order("", false) + " LIMIT $" + strconv.Itoa(n)
}

// lastKey is the last key in the table of selected keys (desc), or the
// first.
func (q query) edgeKey(desc bool) string {
	return "SELECT " + q.key.quoted() + " FROM " + keysTable + q.order("", desc) + " LIMIT 1"
}

// countKeys counts the selected keys.
func (q query) countKeys() string {
	return "SELECT count(*) FROM " + keysTable
}

// page is the next page of at most n (the last parameter) selected keys,
// after the key the first parameters give when after is set.
func (q query) page(after bool) string {
	s := "SELECT " + q.key.quoted() + " FROM " + keysTable
	n := 1
	if after {
		s += " WHERE (" + q.key.quoted() + ") > (" + q.params(1) + ")"
		n += len(q.key.Columns)
	}
	return s + q.order("", false) + " LIMIT $" + strconv.Itoa(n)
}

// pageEnd is the last key of the next page; no row when none is left.
func (q query) pageEnd(after bool) string {
	return "SELECT " + q.key.quoted() + " FROM (" + q.page(after) + ") p" + q.order("", true) + " LIMIT 1"
}

// batch is every column of the table's rows whose keys are in the next
// page, in key order: the rows as they are now (a row deleted since it
// was selected is not read). The page's LIMIT keeps the plan a loop over
// the page's keys on the table's key index, however large the table.
func (q query) batch(after bool) string {
	return "SELECT t.* FROM (" + q.page(after) + ") k JOIN " + q.table + " t ON (" + q.qualified("t") + ") = (" + q.qualified("k") + ")" + q.order("k", false)
}

// probe is the batch's columns and no row: the mapping is checked against
// them before anything is read.
func (q query) probe() string {
	return "SELECT * FROM " + q.table + " LIMIT 0"
}

// params is "$n::type1, $n+1::type2, …", one per key column.
func (q query) params(n int) string {
	ps := make([]string, len(q.key.Columns))
	for i, t := range q.key.Types {
		ps[i] = "$" + strconv.Itoa(n+i) + "::" + t
	}
	return strings.Join(ps, ", ")
}

// qualified is the key's columns, quoted, each prefixed with alias.
func (q query) qualified(alias string) string {
	cols := make([]string, len(q.key.Columns))
	for i, c := range q.key.Columns {
		cols[i] = alias + "." + pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(cols, ", ")
}

// order is the key's order, ascending or descending, its columns prefixed
// with alias when one is given.
func (q query) order(alias string, desc bool) string {
	cols := make([]string, len(q.key.Columns))
	for i, c := range q.key.Columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
		if alias != "" {
			cols[i] = alias + "." + cols[i]
		}
		if desc {
			cols[i] += " DESC"
		}
	}
	return " ORDER BY " + strings.Join(cols, ", ")
}
