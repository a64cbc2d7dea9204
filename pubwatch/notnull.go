package pubwatch

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// notNullSQL reads the columns of the table $1 (a quoted name) declared
// NOT NULL, one a row, in the table's order.
const notNullSQL = `SELECT attname::text FROM pg_attribute
	WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped AND attnotnull ORDER BY attnum`

// WithNotNull returns ms with each mapping that writes a JSON schema
// (decoder.ConverterJSONWithSchema, for its key, value or headers) given its table's NOT NULL columns
// (decoder.Mapping.NotNull), read from the catalog through db now: the
// schema of a NOT NULL key or payload column says it is not optional, as
// Debezium's does. The other mappings are returned as they are, and
// nothing is read for them. A table that does not exist has none.
func WithNotNull(ctx context.Context, db pgdb.DB, ms []decoder.Mapping) ([]decoder.Mapping, error) {
	return withNotNull(ctx, ms, func(ctx context.Context, table string) ([]string, error) {
		var cols []string
		err := db.QueryRow(ctx, `SELECT coalesce(array_agg(attname), '{}') FROM (`+notNullSQL+`) c`, table).Scan(&cols)
		return cols, err
	})
}

// WithNotNullText is [WithNotNull] on a connection of PostgreSQL's text
// protocol.
func WithNotNullText(ctx context.Context, conn *pgconn.PgConn, ms []decoder.Mapping) ([]decoder.Mapping, error) {
	return withNotNull(ctx, ms, func(ctx context.Context, table string) ([]string, error) {
		res := conn.ExecParams(ctx, notNullSQL, [][]byte{[]byte(table)}, nil, nil, nil).Read()
		if res.Err != nil {
			return nil, res.Err
		}
		cols := make([]string, len(res.Rows))
		for i, r := range res.Rows {
			cols[i] = string(r[0])
		}
		return cols, nil
	})
}

// withNotNull is WithNotNull with read, which reads a table's NOT NULL
// columns.
func withNotNull(ctx context.Context, ms []decoder.Mapping, read func(ctx context.Context, table string) ([]string, error)) ([]decoder.Mapping, error) {
	out := slices.Clone(ms)
	for i, m := range out {
		if m.KeyConverter != decoder.ConverterJSONWithSchema && m.ValueConverter != decoder.ConverterJSONWithSchema &&
			m.HeaderConverter != decoder.ConverterJSONWithSchema {
			continue
		}
		table := pgx.Identifier{m.Schema, m.Table}.Sanitize()
		qctx, cancel := context.WithTimeout(ctx, checkTimeout)
		cols, err := read(qctx, table)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read the NOT NULL columns of %s (the schemas its json-with-schema converters write say which are optional): %w", table, err)
		}
		out[i].NotNull = cols
	}
	return out, nil
}
