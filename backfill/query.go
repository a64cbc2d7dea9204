package backfill

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// query builds the SQL a backfill runs on one table: the user's
// predicate, and the key's condition and order. The predicate stands on
// lines of its own, in parentheses, so that a trailing -- comment or an OR
// in it cannot reach the key's condition.
type query struct {
	table string // quoted
	key   Key
	where string // the user's predicate
}

// selects is the rows the predicate selects after the key whose values
// are the parameters $1…$n (none when after is false).
func (q query) selects(after bool) string {
	s := " FROM " + q.table + " WHERE (\n" + q.where + "\n)"
	if after {
		s += " AND (" + q.key.quoted() + ") > (" + q.params() + ")"
	}
	return s
}

// params is "$1::type1, $2::type2, …", one per key column.
func (q query) params() string {
	ps := make([]string, len(q.key.Columns))
	for i, t := range q.key.Types {
		ps[i] = "$" + strconv.Itoa(i+1) + "::" + t
	}
	return strings.Join(ps, ", ")
}

// order is the key's order, ascending or descending.
func (q query) order(desc bool) string {
	cols := make([]string, len(q.key.Columns))
	for i, c := range q.key.Columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
		if desc {
			cols[i] += " DESC"
		}
	}
	return " ORDER BY " + strings.Join(cols, ", ")
}

// batch is the next batch: every column of at most $n+1 rows (the
// parameter after the key's) after the key, in key order. Keyset
// pagination: the key's index finds where a batch starts, however far the
// backfill has gone.
func (q query) batch(after bool) string {
	limit := 1
	if after {
		limit += len(q.key.Columns)
	}
	return "SELECT *" + q.selects(after) + q.order(false) + " LIMIT $" + strconv.Itoa(limit)
}

// count counts the rows after the key.
func (q query) count(after bool) string {
	return "SELECT count(*)" + q.selects(after)
}

// edge is the key of the first (or, desc, the last) row after the key.
func (q query) edge(after, desc bool) string {
	return "SELECT " + q.key.quoted() + q.selects(after) + q.order(desc) + " LIMIT 1"
}
