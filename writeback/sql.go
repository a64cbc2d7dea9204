package writeback

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// statements are one table's statements: delivered is the UPDATE, which
// takes the ids as $1 (text[]) and the delivered status as $2; unwritten
// is its follow-up (Writer's doc), which takes the ids as $1, the ids of
// the transactions that inserted them as $2 (bigint[], 0 unknown) and the
// delivered status as $3, and returns the ids whose outcome is still to
// be written.
type statements struct {
	delivered string
	unwritten string
}

// lookupSQL reads, for the table named by $1 (quoted), whether it exists
// and, for each of the columns $2 that it has: the column's name, its type
// with its length or precision, its type without (bpchar for char(n),
// since "character" alone would cast to char(1)), whether it is a
// timestamp without time zone, whether it is NOT NULL (the column's
// constraint, or its domain's), and its base type without a length (the
// domain's, for a domain).
const lookupSQL = `SELECT c.oid IS NOT NULL, coalesce(array_agg(a.attname::text) FILTER (WHERE a.attname IS NOT NULL), '{}'),
	coalesce(array_agg(format_type(a.atttypid, a.atttypmod)) FILTER (WHERE a.attname IS NOT NULL), '{}'),
	coalesce(array_agg(CASE WHEN a.atttypid = 'bpchar'::regtype THEN 'bpchar' ELSE format_type(a.atttypid, NULL) END)
		FILTER (WHERE a.attname IS NOT NULL), '{}'),
	coalesce(array_agg(a.atttypid = 'timestamp'::regtype) FILTER (WHERE a.attname IS NOT NULL), '{}'),
	coalesce(array_agg(a.attnotnull OR coalesce(t.typnotnull, false)) FILTER (WHERE a.attname IS NOT NULL), '{}'),
	coalesce(array_agg(format_type(coalesce(nullif(t.typbasetype, 0), a.atttypid), NULL)) FILTER (WHERE a.attname IS NOT NULL), '{}')
FROM (SELECT to_regclass($1::text)::oid AS oid) AS c
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = ANY($2::text[]) AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_type t ON t.oid = a.atttypid
GROUP BY c.oid`

// columnType is a column's type, as format_type writes it.
type columnType struct {
	full    string // with its length or precision: varchar(20)
	bare    string // without: character varying
	noZone  bool   // timestamp without time zone
	notNull bool   // NOT NULL, by the column or its domain
	base    string // the type under a domain, without a length: text
}

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

// columns are the columns of t that write-back names: the id column and
// the outcome's.
func (t *Table) columns() []string {
	c := &t.Columns
	cols := []string{t.IDColumn}
	for _, col := range c.WrittenColumns() {
		cols = append(cols, col.Name)
	}
	return cols
}

// lookupTypes reads the types of t's columns (quoted is t's name, quoted),
// or says which are missing.
func lookupTypes(ctx context.Context, db DB, t *Table, quoted string) (map[string]columnType, error) {
	cols := t.columns()
	var (
		exists            bool
		names, full, bare []string
		noZone, notNull   []bool
		base              []string
	)
	if err := db.QueryRow(ctx, lookupSQL, quoted, cols).Scan(&exists, &names, &full, &bare, &noZone, &notNull, &base); err != nil {
		return nil, fmt.Errorf("look up the columns of %s: %w", quoted, err)
	}
	if !exists {
		return nil, &schemaError{table: quoted}
	}
	types := make(map[string]columnType, len(names))
	for i, n := range names {
		types[n] = columnType{full: full[i], bare: bare[i], noZone: noZone[i], notNull: notNull[i], base: base[i]}
	}
	var missing []string
	for _, c := range cols {
		if _, ok := types[c]; !ok {
			missing = append(missing, pgx.Identifier{c}.Sanitize())
		}
	}
	if len(missing) > 0 {
		return nil, &schemaError{table: quoted, missing: missing}
	}
	return types, nil
}

// prepare looks up t's column types and returns its statements.
func prepare(ctx context.Context, db DB, t *tableState) (*statements, error) {
	types, err := lookupTypes(ctx, db, &t.Table, t.quoted)
	if err != nil {
		return nil, err
	}
	return buildStatements(t.Table, types), nil
}

// now is now() for a timestamp column of t: for a timestamp without time
// zone (noZone), the wall time of t's TimeZone (UTC when unset), the
// convention the relay reads such columns by, whatever the session's
// TimeZone.
func (t *Table) now(noZone bool) string { return t.inZone("now()", noZone) }

// inZone is the timestamptz expression expr as a column of t takes it: as
// it is, or for a timestamp without time zone (noZone), the wall time of
// t's TimeZone (UTC when unset).
func (t *Table) inZone(expr string, noZone bool) string {
	if !noZone {
		return expr
	}
	zone := t.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	return "(" + expr + " AT TIME ZONE '" + strings.ReplaceAll(zone, "'", "''") + "')"
}

// buildStatements returns t's statements, for its columns' types as
// lookupTypes reads them (see deliveredSet for what they set).
func buildStatements(t Table, types map[string]columnType) *statements {
	c := &t.Columns
	q := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	idType := types[t.IDColumn].full
	set := t.deliveredSet(types)
	table := pgx.Identifier{t.Schema, t.Name}.Sanitize()
	return &statements{
		delivered: "UPDATE " + table + " SET " + set +
			" WHERE " + q(t.IDColumn) + " = ANY($1::text[]::" + idType + "[])" +
			" AND " + q(c.StatusColumn) + "::text IS DISTINCT FROM $2::text",
		unwritten: fmt.Sprintf(unwrittenSQL, table, q(t.IDColumn), idType, q(c.StatusColumn)),
	}
}

// unwrittenSQL, for table %[1]s with id column %[2]s of type %[3]s and
// status column %[4]s, returns two arrays of those of the ids $1 whose row
// does not say the delivered value $3: the ids whose row exists (it
// became visible after the UPDATE's snapshot was taken, or it refuses the
// UPDATE without an error: a BEFORE UPDATE trigger that returns NULL, a
// rule, a row-level security policy), and the ids without a row that were
// inserted by a transaction $2 the statement's snapshot does not see yet:
// committed in the WAL, and so decoded and delivered, but not yet visible
// to other sessions (its id may be at or above the snapshot's xmax). A
// row that is gone although its transaction is visible was deleted: its
// id is in neither. The transaction's 32-bit id is widened to the 64-bit
// id nearest the snapshot's xmax; one that would fall below 0 is not this
// server's, and taken as visible.
const unwrittenSQL = `SELECT coalesce(array_agg(m.id) FILTER (WHERE e.found), '{}'), coalesce(array_agg(m.id) FILTER (WHERE NOT e.found), '{}')
FROM unnest($1::text[], $2::bigint[]) AS m(id, xid)
CROSS JOIN LATERAL (SELECT pg_current_snapshot() AS snap) s
CROSS JOIN LATERAL (SELECT pg_snapshot_xmax(s.snap)::text::bigint AS xmax) x
CROSS JOIN LATERAL (SELECT ((x.xmax >> 32) << 32) | m.xid AS xid8) w
CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM %[1]s r WHERE r.%[2]s = m.id::%[3]s) AS found) e
WHERE NOT EXISTS (SELECT 1 FROM %[1]s r WHERE r.%[2]s = m.id::%[3]s AND r.%[4]s::text IS NOT DISTINCT FROM $3::text)
AND (e.found
	OR m.xid <> 0 AND NOT pg_visible_in_snapshot(
		greatest(CASE WHEN w.xid8 > x.xmax + 2147483648 THEN w.xid8 - 4294967296
			WHEN w.xid8 < x.xmax - 2147483648 THEN w.xid8 + 4294967296 ELSE w.xid8 END, 0)::text::xid8, s.snap))`

// deliveredSet is the SET list of a delivered row of t, for its columns'
// types as lookupTypes reads them, with the delivered status as $2: the
// status cast to its type without a length (a cast to varchar(n) would
// cut a longer value where an assignment refuses it), then assigned; the
// delivered-at and last-attempt columns now() (a timestamp without time
// zone in t's TimeZone, UTC by default, the convention the relay reads
// such columns by, whatever the session's); the error column cleared,
// unless KeepError.
func (t *Table) deliveredSet(types map[string]columnType) string {
	c := &t.Columns
	q := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	set := q(c.StatusColumn) + " = $2::text::" + types[c.StatusColumn].bare
	for _, col := range []string{c.DeliveredAtColumn, c.LastAttemptColumn} {
		if col != "" {
			set += ", " + q(col) + " = " + t.now(types[col].noZone)
		}
	}
	if clear := clearError(c, types); clear != "" {
		set += ", " + clear
	}
	return set
}

// clearError is the assignment that clears c's error column once its
// event is delivered, for its type in types: NULL, or the empty string
// for a NOT NULL column of a text type (a domain over one too), whose "no
// error" it is; "" (no assignment) when c has no error column, keeps it
// (KeepError), or it is NOT NULL of another type (an enum), which has no
// value that says none.
func clearError(c *Columns, types map[string]columnType) string {
	if c.ErrorColumn == "" || c.KeepError {
		return ""
	}
	col, typ := pgx.Identifier{c.ErrorColumn}.Sanitize(), types[c.ErrorColumn]
	switch {
	case !typ.notNull:
		return col + " = NULL"
	case typ.base == "text" || typ.base == "character varying" || typ.base == "character":
		return col + " = ''"
	}
	return ""
}
