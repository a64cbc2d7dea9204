package writeback

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// statements are one table's UPDATE statements. Both take the ids as $1
// (text[]) and the status as $2; failed takes the reasons as $3 when the
// table has an error column.
type statements struct {
	delivered, failed string
	failedReasons     bool // failed takes $3
}

// lookupSQL reads, for the table named by $1 (quoted): whether it exists;
// the types of the columns $2 (the id), $3 (the status, without its
// length or precision: bpchar for char(n), since "character" alone would
// cast to char(1)) and $4 (the error column, or ""); and which of the
// columns $5 do not exist; and whether the delivered-at column $6 is a
// timestamp without time zone.
const lookupSQL = `SELECT c.oid IS NOT NULL,
	(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		WHERE a.attrelid = c.oid AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped),
	(SELECT CASE WHEN a.atttypid = 'bpchar'::regtype THEN 'bpchar' ELSE format_type(a.atttypid, NULL) END FROM pg_attribute a
		WHERE a.attrelid = c.oid AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped),
	(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		WHERE a.attrelid = c.oid AND a.attname = $4 AND a.attnum > 0 AND NOT a.attisdropped),
	ARRAY(SELECT n FROM unnest($5::text[]) AS n WHERE NOT EXISTS (SELECT FROM pg_attribute a
		WHERE a.attrelid = c.oid AND a.attname = n AND a.attnum > 0 AND NOT a.attisdropped)),
	coalesce((SELECT a.atttypid = 'timestamp'::regtype FROM pg_attribute a
		WHERE a.attrelid = c.oid AND a.attname = $6 AND a.attnum > 0 AND NOT a.attisdropped), false)
FROM (SELECT to_regclass($1::text)::oid AS oid) AS c`

// schemaError says that a table, or a column of it, does not exist.
type schemaError struct {
	table   string   // quoted
	missing []string // columns; nil when the table is missing
}

func (e *schemaError) Error() string {
	if e.missing == nil {
		return fmt.Sprintf("table %s does not exist (or the relay's role may not see it)", e.table)
	}
	return fmt.Sprintf("table %s has no column %s", e.table, strings.Join(e.missing, ", "))
}

// prepare looks up t's column types and returns its statements.
func prepare(ctx context.Context, db DB, t *tableState) (*statements, error) {
	c := &t.Columns
	cols := []string{t.IDColumn, c.StatusColumn}
	for _, col := range []string{c.DeliveredAtColumn, c.ErrorColumn} {
		if col != "" {
			cols = append(cols, col)
		}
	}
	var (
		exists                      bool
		idType, statusType, errType *string
		missing                     []string
		atLocal                     bool
	)
	if err := db.QueryRow(ctx, lookupSQL, t.quoted, t.IDColumn, c.StatusColumn, c.ErrorColumn, cols, c.DeliveredAtColumn).
		Scan(&exists, &idType, &statusType, &errType, &missing, &atLocal); err != nil {
		return nil, fmt.Errorf("look up the columns of %s: %w", t.quoted, err)
	}
	switch {
	case !exists:
		return nil, &schemaError{table: t.quoted}
	case len(missing) > 0:
		for i, m := range missing {
			missing[i] = pgx.Identifier{m}.Sanitize()
		}
		return nil, &schemaError{table: t.quoted, missing: missing}
	}
	e := ""
	if errType != nil {
		e = *errType
	}
	return buildStatements(t.Table, *idType, *statusType, e, atLocal), nil
}

// buildStatements returns t's statements, for an id column of type
// idType, a status column of type statusType and an error column of type
// errType, as format_type writes them. The status is cast to its type
// without a length (a cast to varchar(n) would cut a longer value where an
// assignment refuses it), then assigned. The delivered-at column takes
// now(); a timestamp without time zone (atLocal) takes it in UTC, the
// convention the relay reads such columns by, whatever the session's
// TimeZone.
func buildStatements(t Table, idType, statusType, errType string, atLocal bool) *statements {
	c := &t.Columns
	q := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	table := pgx.Identifier{t.Schema, t.Name}.Sanitize()
	id, status := q(t.IDColumn), q(c.StatusColumn)
	ids := "$1::text[]::" + idType + "[]"
	unchanged := " AND " + status + "::text IS DISTINCT FROM $2::text"

	simple := func(extra string) string {
		return "UPDATE " + table + " SET " + status + " = $2::text::" + statusType + extra +
			" WHERE " + id + " = ANY(" + ids + ")" + unchanged
	}
	s := &statements{}
	if c.DeliveredAtColumn != "" {
		now := "now()"
		if atLocal {
			now = "(now() AT TIME ZONE 'UTC')"
		}
		s.delivered = simple(", " + q(c.DeliveredAtColumn) + " = " + now)
	} else {
		s.delivered = simple("")
	}
	if c.ErrorColumn == "" {
		s.failed = simple("")
		return s
	}
	s.failedReasons = true
	s.failed = "UPDATE " + table + " AS o SET " + status + " = $2::text::" + statusType + ", " + q(c.ErrorColumn) + " = v.err::" + errType +
		" FROM unnest(" + ids + ", $3::text[]) AS v(id, err) WHERE o." + id + " = v.id AND o." + status +
		"::text IS DISTINCT FROM $2::text"
	return s
}
