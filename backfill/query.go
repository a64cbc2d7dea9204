package backfill

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// query builds the SQL a backfill runs on one table: the user's
// predicate, and the key's conditions and order. The predicate stands on
// lines of its own, in parentheses, so that a trailing -- comment or an OR
// in it cannot reach the key's conditions.
type query struct {
	table string // quoted
	key   Key
	where string // the user's predicate
	// after: the rows after a key (its values are the first parameters);
	// upTo: the rows up to a key (its values follow).
	after, upTo bool
}

// selects is the rows the predicate selects, after and up to the keys the
// parameters give.
func (q query) selects() string {
	s := " FROM " + q.table + " WHERE (\n" + q.where + "\n)"
	n := 1
	if q.after {
		s += " AND (" + q.key.quoted() + ") > (" + q.params(n) + ")"
		n += len(q.key.Columns)
	}
	if q.upTo {
		s += " AND (" + q.key.quoted() + ") <= (" + q.params(n) + ")"
	}
	return s
}

// nparams is how many parameters selects takes.
func (q query) nparams() int {
	n := 0
	if q.after {
		n += len(q.key.Columns)
	}
	if q.upTo {
		n += len(q.key.Columns)
	}
	return n
}

// params is "$n::type1, $n+1::type2, …", one per key column.
func (q query) params(n int) string {
	ps := make([]string, len(q.key.Columns))
	for i, t := range q.key.Types {
		ps[i] = "$" + strconv.Itoa(n+i) + "::" + t
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

// batch is the next batch: every column of at most n rows (the parameter
// after the keys') in key order. Keyset pagination: the key's index finds
// where a batch starts, however far the backfill has gone.
func (q query) batch() string {
	return "SELECT *" + q.selects() + q.order(false) + " LIMIT $" + strconv.Itoa(q.nparams()+1)
}

// count counts the rows.
func (q query) count() string {
	return "SELECT count(*)" + q.selects()
}

// edge is the key of the first (or, desc, the last) row.
func (q query) edge(desc bool) string {
	return "SELECT " + q.key.quoted() + q.selects() + q.order(desc) + " LIMIT 1"
}
