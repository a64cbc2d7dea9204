package progress

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Source is the outbox table whose positions a progress table follows:
// its id column is the position, of an integer type.
type Source struct {
	// Schema, Name and IDColumn are the outbox table's.
	Schema, Name, IDColumn string
	// Topics are the topics the table's routes name: the relay adds a row
	// for each that has none. Nil (a topic column or template): the
	// relay keeps the rows the team has, and adds none.
	Topics []string
}

// integerTypes are the types of a position column, and of the id column
// of a Source.
var integerTypes = []string{"smallint", "integer", "bigint"}

// Check checks, before the relay starts, that the progress table t and
// the id column of src are as the relay needs them, and returns t with
// the optional columns the table lacks left out (set to ""), and what it
// left out, for the log. The table must exist with its topic, publisher
// and position columns, the position and the id of an integer type, and
// the role must be able to read, insert and update it. A column named
// but missing is left out when optional (status, error count, last
// error, the two times); the log line says so.
func Check(ctx context.Context, db pgdb.Querier, t Table, src Source) (Table, []string, error) {
	cols, err := columnTypes(ctx, db, t.Schema, t.Name)
	if err != nil {
		return t, nil, err
	}
	name := t.Schema + "." + t.Name
	if len(cols) == 0 {
		return t, nil, fmt.Errorf("progress table %s does not exist: create it (an event store's schema has outbox_topic_progress), or name another with progress.table", name)
	}
	for _, c := range []struct{ key, col string }{{"topic_column", t.TopicColumn}, {"publisher_column", t.PublisherColumn}, {"position_column", t.PositionColumn}} {
		if _, ok := cols[c.col]; !ok {
			return t, nil, fmt.Errorf("progress table %s has no column %q (progress.%s): name the column that holds it", name, c.col, c.key)
		}
	}
	if typ := cols[t.PositionColumn]; !isInteger(typ) {
		return t, nil, fmt.Errorf("progress table %s: its position column %q is %s; the relay writes an integer position (bigint)", name, t.PositionColumn, typ)
	}
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
	if err := checkSource(ctx, db, src); err != nil {
		return t, nil, err
	}
	return t, left, checkPrivileges(ctx, db, t)
}

// columnTypes returns the columns of schema.table with their types; none
// when the table does not exist.
func columnTypes(ctx context.Context, db pgdb.Querier, schema, table string) (map[string]string, error) {
	rows, _ := db.Query(ctx, "SELECT a.attname::text, format_type(a.atttypid, NULL) FROM pg_attribute AS a"+
		" WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped", pgx.Identifier{schema, table}.Sanitize())
	cols := map[string]string{}
	var name, typ string
	_, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
		cols[name] = typ
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s.%s: %w", schema, table, err)
	}
	return cols, nil
}

func isInteger(typ string) bool {
	for _, t := range integerTypes {
		if typ == t {
			return true
		}
	}
	return false
}

// checkSource checks that src's id column is of an integer type: it is
// the position the progress table holds.
func checkSource(ctx context.Context, db pgdb.Querier, src Source) error {
	cols, err := columnTypes(ctx, db, src.Schema, src.Name)
	if err != nil {
		return err
	}
	typ, ok := cols[src.IDColumn]
	if !ok {
		return nil // the table's own check names a missing column
	}
	if !isInteger(typ) {
		return fmt.Errorf("outbox table %s.%s: progress needs an id column of an integer type, its position; %q is %s", src.Schema, src.Name, src.IDColumn, typ)
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
		return fmt.Errorf("outbox table %s.%s: progress reads the highest %s every second, and no index starts with it: CREATE INDEX ON %s (%s), or make it the primary key",
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
		return fmt.Errorf("the relay's role cannot %s progress table %s.%s: run GRANT %s ON %s TO <the relay's role>",
			strings.ToLower(strings.Join(missing, ", ")), t.Schema, t.Name, strings.Join(missing, ", "), t.QuotedName())
	}
	return nil
}
