package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// column is a column of a table as the checks see it.
type column struct {
	name string
	// oid is the column's type; base is the type under a domain (oid
	// otherwise), which the type rules apply to.
	oid, base uint32
	// typ is the type's name, as format_type writes it.
	typ  string
	enum bool
	// maxLen is the length of a varchar(n) or char(n); 0 for none.
	maxLen  int
	notNull bool
}

// PostgreSQL type OIDs the column checks accept.
const (
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidNumeric     = 1700
	oidText        = 25
	oidJSON        = 114
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidJSONB       = 3802
	oidTextArray   = 1009
	oidVarcharArr  = 1015
)

// typeRule is the types a column in a role may have.
type typeRule struct {
	oids []uint32
	enum bool   // an enum type is usable too
	want string // the types, for the message
}

// typeRules are the roles whose column types matter, by config key. The
// other roles take any type: the decoder sends a column's text (a bytea
// key or value as its bytes).
var typeRules = map[string]typeRule{
	"timestamp":                      {oids: []uint32{oidTimestamptz, oidTimestamp, oidInt8}, want: "timestamptz, timestamp or bigint (epoch milliseconds)"},
	"headers_column":                 {oids: []uint32{oidJSON, oidJSONB}, want: "json or jsonb (an object)"},
	"tags_column":                    {oids: []uint32{oidTextArray, oidVarcharArr, oidJSON, oidJSONB}, want: "text[], varchar[], json or jsonb"},
	"write_back.status_column":       {oids: []uint32{oidText, oidVarchar, oidBpchar}, enum: true, want: "text, varchar, char or an enum"},
	"write_back.error_column":        {oids: []uint32{oidText, oidVarchar, oidBpchar}, enum: true, want: "text, varchar, char or an enum"},
	"write_back.delivered_at_column": {oids: []uint32{oidTimestamptz, oidTimestamp}, want: "timestamptz or timestamp"},
	"write_back.attempts_column":     {oids: []uint32{oidInt2, oidInt4, oidInt8, oidNumeric}, want: "smallint, integer, bigint or numeric"},
	"write_back.next_attempt_column": {oids: []uint32{oidTimestamptz, oidTimestamp}, want: "timestamptz or timestamp"},
	"write_back.last_attempt_column": {oids: []uint32{oidTimestamptz, oidTimestamp}, want: "timestamptz or timestamp"},
}

// tableColumns reads the columns of the table ident, in order.
func tableColumns(ctx context.Context, q pgdb.Querier, ident string) ([]column, error) {
	rows, err := q.Query(ctx, `SELECT a.attname, a.atttypid, coalesce(b.oid, t.oid), format_type(a.atttypid, a.atttypmod),
			coalesce(b.typtype, t.typtype) = 'e',
			CASE WHEN coalesce(b.oid, t.oid) IN (1042, 1043) AND coalesce(nullif(t.typtypmod, -1), a.atttypmod) > 4
				THEN coalesce(nullif(t.typtypmod, -1), a.atttypmod) - 4 ELSE 0 END,
			a.attnotnull OR t.typnotnull
		FROM pg_attribute a
		JOIN pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_type b ON t.typtype = 'd' AND b.oid = t.typbasetype
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, ident)
	if err != nil {
		return nil, err
	}
	var cols []column
	var c column
	_, err = pgx.ForEachRow(rows, []any{&c.name, &c.oid, &c.base, &c.typ, &c.enum, &c.maxLen, &c.notNull}, func() error {
		cols = append(cols, c)
		return nil
	})
	return cols, err
}

// columnsByName indexes cols by name.
func columnsByName(cols []column) map[string]column {
	byName := make(map[string]column, len(cols))
	for _, c := range cols {
		byName[c.name] = c
	}
	return byName
}

// checkColumnTypes returns a problem for each column t names that the
// table lacks, or whose type the relay cannot use in its role.
func checkColumnTypes(t outbox.Table, cols []column) []Problem {
	var problems []Problem
	add := func(col, format string, args ...any) {
		problems = append(problems, Problem{Table: t.Name(), Column: col, Msg: fmt.Sprintf(format, args...)})
	}
	byName := columnsByName(cols)
	for _, use := range t.Columns() {
		c, ok := byName[use.Name]
		if !ok {
			add(use.Name, "has no column %q (%s): fix %s, or add the column", use.Name, use.Key, fixWhere(use.Key))
			continue
		}
		rule, ok := typeRules[use.Key]
		if !ok || slices.Contains(rule.oids, c.base) || rule.enum && c.enum {
			continue
		}
		add(use.Name, "column %q (%s) has type %s; want %s: change the column's type, or name another column in %s", use.Name, use.Key, c.typ, rule.want, fixWhere(use.Key))
	}
	return problems
}

// fixWhere says where in the config a column named by key is set.
func fixWhere(key string) string {
	if h, ok := strings.CutPrefix(key, "headers."); ok {
		return fmt.Sprintf("the column of header %q under headers", h)
	}
	if f, ok := strings.CutPrefix(key, "envelope."); ok {
		return fmt.Sprintf("the column of field %q under envelope", f)
	}
	if key == "topic" {
		return "the template in topic"
	}
	return key
}

// checkDecoderColumns returns the problem the decoder itself finds in the
// columns, as it would find them in a Relation message, or nil.
func checkDecoderColumns(t outbox.Table, cols []column) *Problem {
	names := make([]string, len(cols))
	types := make([]uint32, len(cols))
	for i, c := range cols {
		names[i], types[i] = c.name, c.oid
	}
	m := t.Mapping
	err := m.CheckColumns(names, types)
	if err == nil {
		return nil
	}
	var me *decoder.MappingError
	col := ""
	if errors.As(err, &me) {
		col, err = me.Missing, me.Err
	}
	return &Problem{Table: t.Name(), Column: col, Msg: fmt.Sprintf("%v", err)}
}
