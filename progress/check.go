package progress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Source is the outbox table whose positions a progress table follows:
// its id column is the position, of an integer type.
type Source struct {
	// Schema, Name and IDColumn are the outbox table's.
	Schema, Name, IDColumn string
	// Topics are the topics the table's routes name (or its template's
	// one): the relay writes their rows, adding those the table lacks.
	// Nil (a topic column): the relay keeps the rows the team has for its
	// publisher, and adds none.
	Topics []string
}

// RefusedError is a progress table, or an outbox table, that the relay
// cannot keep true: what is wrong and what to do. Trying again does not
// help until the operator acts.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

func refuse(format string, args ...any) error {
	return &RefusedError{Msg: fmt.Sprintf(format, args...)}
}

// column is what Check reads of a column.
type column struct {
	typ     string // format_type, without its modifier
	typmod  int32
	notNull bool
	filled  bool // a default, an identity or a generated column
}

// integerWidth is the width of each integer type a position or an id
// may have.
var integerWidth = map[string]int{"smallint": 2, "integer": 4, "bigint": 8}

// Check checks, before the relay starts, that the progress table t and
// the id column of src are as the relay needs them, and returns t with
// the optional columns the table lacks left out (set to ""), and what it
// left out, for the log. A *RefusedError says what to change: the table
// must exist with its topic, publisher and position columns, the position
// as wide an integer as the id (which an index must start with), a unique
// index on (topic, publisher), no other NOT NULL column without a default
// (the relay adds rows with these three), and the role must be able to
// read, insert and update it. Any other error is the database's (tried
// again at the next start).
func Check(ctx context.Context, db pgdb.Querier, t Table, src Source) (Table, []string, error) {
	cols, err := columns(ctx, db, t.Schema, t.Name)
	if err != nil {
		return t, nil, err
	}
	name := t.Schema + "." + t.Name
	if len(cols) == 0 {
		return t, nil, refuse("progress table %s does not exist: create it (an event store's schema has outbox_topic_progress), or name another with progress.table", name)
	}
	for _, c := range []struct{ key, col string }{{"topic_column", t.TopicColumn}, {"publisher_column", t.PublisherColumn}, {"position_column", t.PositionColumn}} {
		if _, ok := cols[c.col]; !ok {
			return t, nil, refuse("progress table %s has no column %q (progress.%s): name the column that holds it", name, c.col, c.key)
		}
	}
	left := t.leaveOutMissing(cols)
	if err := t.checkColumns(name, cols); err != nil {
		return t, nil, err
	}
	if err := checkUnique(ctx, db, t); err != nil {
		return t, nil, err
	}
	if err := checkSource(ctx, db, src, cols[t.PositionColumn].typ); err != nil {
		return t, nil, err
	}
	return t, left, checkPrivileges(ctx, db, t)
}

// leaveOutMissing sets the optional columns cols lacks to "", and returns
// what it left out; it reads the last error column's limits.
func (t *Table) leaveOutMissing(cols map[string]column) []string {
	var left []string
	for _, c := range []struct {
		key string
		col *string
	}{{"status_column", &t.StatusColumn}, {"error_count_column", &t.ErrorCountColumn}, {"last_error_column", &t.LastErrorColumn},
		{"published_at_column", &t.PublishedAtColumn}, {"updated_at_column", &t.UpdatedAtColumn}} {
		if _, ok := cols[*c.col]; *c.col != "" && !ok {
			left = append(left, fmt.Sprintf("%s (progress.%s)", *c.col, c.key))
			*c.col = ""
		}
	}
	if c, ok := cols[t.LastErrorColumn]; ok {
		if c.typ == "character varying" && c.typmod > 4 {
			t.lastErrorMax = int(c.typmod - 4)
		}
		t.lastErrorNotNull = c.notNull
	}
	return left
}

// checkColumns refuses a position column that is no integer, and a NOT
// NULL column without a default that the relay's rows would leave empty.
func (t Table) checkColumns(name string, cols map[string]column) error {
	if typ := cols[t.PositionColumn].typ; integerWidth[typ] == 0 {
		return refuse("progress table %s: its position column %q is %s; the relay writes an integer position (bigint)", name, t.PositionColumn, typ)
	}
	var empty []string
	for col, c := range cols {
		if c.notNull && !c.filled && col != t.TopicColumn && col != t.PublisherColumn && col != t.PositionColumn {
			empty = append(empty, col)
		}
	}
	if len(empty) > 0 {
		slices.Sort(empty)
		return refuse("progress table %s: the relay adds a row for a topic it has none for, with its topic, publisher and position; %s NOT NULL without a default: "+
			"give each a default (ALTER TABLE %s ALTER COLUMN %s SET DEFAULT …)", name, strings.Join(empty, ", ")+map[bool]string{true: " is", false: " are"}[len(empty) == 1],
			t.QuotedName(), ident(empty[0]))
	}
	return nil
}

// columns returns the columns of schema.table; none when the table does
// not exist.
func columns(ctx context.Context, db pgdb.Querier, schema, table string) (map[string]column, error) {
	rows, _ := db.Query(ctx, "SELECT a.attname::text, format_type(a.atttypid, NULL), a.atttypmod, a.attnotnull,"+
		" a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '' FROM pg_attribute AS a"+
		" WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped", pgx.Identifier{schema, table}.Sanitize())
	cols := map[string]column{}
	var name string
	var c column
	_, err := pgx.ForEachRow(rows, []any{&name, &c.typ, &c.typmod, &c.notNull, &c.filled}, func() error {
		cols[name] = c
		return nil
	})
	if err != nil {
		return nil, withUsageHint(fmt.Errorf("read the columns of %s.%s: %w", schema, table, err), schema)
	}
	return cols, nil
}

// withUsageHint adds, to a permission denied on a schema, the GRANT that
// lets the role in.
func withUsageHint(err error, schema string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" && strings.Contains(pgErr.Message, "schema") {
		return refuse("%v: run GRANT USAGE ON SCHEMA %s TO <the relay's role>", err, ident(schema))
	}
	return err
}

// checkUnique refuses a table without a unique index on exactly its topic
// and publisher columns: two relays adding a row at once (a leader's hand
// over) would add it twice, and a team's SQL would find two.
func checkUnique(ctx context.Context, db pgdb.Querier, t Table) error {
	var ok bool
	err := db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_index AS i WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL"+
		" AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey))"+
		" = (SELECT array_agg(x ORDER BY x) FROM unnest(ARRAY[$2, $3]::text[]) AS x) AND i.indnatts = 2)",
		t.QuotedName(), t.TopicColumn, t.PublisherColumn).Scan(&ok)
	if err != nil {
		return fmt.Errorf("read the indexes of %s.%s: %w", t.Schema, t.Name, err)
	}
	if !ok {
		return refuse("progress table %s.%s has no unique index on (%s, %s): add one (ALTER TABLE %s ADD PRIMARY KEY (%s, %s)), so that no topic has two rows",
			t.Schema, t.Name, t.TopicColumn, t.PublisherColumn, t.QuotedName(), ident(t.TopicColumn), ident(t.PublisherColumn))
	}
	return nil
}

// checkSource checks that src's id column is of an integer type no wider
// than the position column's (posType), and that an index starts with it.
func checkSource(ctx context.Context, db pgdb.Querier, src Source, posType string) error {
	cols, err := columns(ctx, db, src.Schema, src.Name)
	if err != nil {
		return err
	}
	c, ok := cols[src.IDColumn]
	if !ok {
		return nil // the table's own check names a missing column
	}
	if integerWidth[c.typ] == 0 {
		return refuse("outbox table %s.%s: progress needs an id column of an integer type, its position; %q is %s", src.Schema, src.Name, src.IDColumn, c.typ)
	}
	if integerWidth[c.typ] > integerWidth[posType] {
		return refuse("outbox table %s.%s: its id %q is a %s, wider than the progress table's position column (%s): make that column a %s", src.Schema, src.Name, src.IDColumn, c.typ, posType, c.typ)
	}
	// The writer reads max(id) every interval: without an index that
	// starts with it, that is a scan of the whole table each time.
	var indexed bool
	err = db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_index AS i JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]"+
		" WHERE i.indrelid = to_regclass($1) AND a.attname = $2 AND i.indpred IS NULL)", pgx.Identifier{src.Schema, src.Name}.Sanitize(), src.IDColumn).Scan(&indexed)
	if err != nil {
		return fmt.Errorf("read the indexes of %s.%s: %w", src.Schema, src.Name, err)
	}
	if !indexed {
		return refuse("outbox table %s.%s: progress reads the highest %s every second, and no index starts with it: CREATE INDEX ON %s (%s), or make it the primary key",
			src.Schema, src.Name, src.IDColumn, pgx.Identifier{src.Schema, src.Name}.Sanitize(), ident(src.IDColumn))
	}
	return nil
}

// checkPrivileges refuses a role that cannot read, insert or update the
// progress table, with the GRANT that lets it.
func checkPrivileges(ctx context.Context, db pgdb.Querier, t Table) error {
	var missing []string
	for _, priv := range []string{"SELECT", "INSERT", "UPDATE"} {
		var ok bool
		if err := db.QueryRow(ctx, "SELECT has_table_privilege(to_regclass($1), $2)", t.QuotedName(), priv).Scan(&ok); err != nil {
			return fmt.Errorf("read the privileges on progress table %s.%s: %w", t.Schema, t.Name, err)
		}
		if !ok {
			missing = append(missing, priv)
		}
	}
	if len(missing) > 0 {
		return refuse("the relay's role cannot %s progress table %s.%s: run GRANT %s ON %s TO <the relay's role>",
			strings.ToLower(strings.Join(missing, ", ")), t.Schema, t.Name, strings.Join(missing, ", "), t.QuotedName())
	}
	return nil
}
