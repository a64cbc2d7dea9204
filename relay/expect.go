package relay

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// expectedMappings returns the session's mappings, table i at index i:
// each optional column the mapping names (the id, topic, headers and
// timestamp columns) that the table has now is expected of every Relation
// the stream sends (decoder.Mapping.Expecting), so that a column renamed
// or dropped while the relay runs parks the rows written without it and
// stops the relay while the table lacks it (see tableWatch.unfit), rather
// than sending them without their id, to another topic, or without their
// headers or timestamp. A named optional column the table lacks now is
// warned of once, with the flag that maps it or says there is none.
func (s *session) expectedMappings(ctx context.Context) ([]decoder.Mapping, error) {
	ms := s.cfg.Mappings()
	for i, m := range ms {
		names, _, err := tableColumns(ctx, s.pool, m.Schema, m.Table)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			continue // no such table: the table watch says so
		}
		ms[i] = m.Expecting(names)
		if lacks := lacking(m.OptionalColumns(), names); len(lacks) > 0 {
			s.log.Warn("the outbox table lacks optional columns the mapping names: its events go without them; "+
				"map the columns that hold them, or map them to '' to say there are none (--id-column '', --topic-column '', --headers-column '', --timestamp-column '')",
				"table", m.Schema+"."+m.Table, "columns", strings.Join(lacks, ", "))
		}
	}
	return ms, nil
}

// lacking returns the columns of cols that are not among names.
func lacking(cols, names []string) []string {
	var out []string
	for _, c := range cols {
		if !slices.Contains(names, c) {
			out = append(out, c)
		}
	}
	return out
}

// tableColumns reads the current columns of table schema.name, their names
// and type OIDs in order; none when there is no such table.
func tableColumns(ctx context.Context, db migrations.Querier, schema, name string) ([]string, []uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	outbox := pgx.Identifier{schema, name}.Sanitize()
	var names []string
	var types []uint32
	err := db.QueryRow(ctx, `SELECT coalesce(array_agg(attname::text ORDER BY attnum), '{}'), coalesce(array_agg(atttypid ORDER BY attnum), '{}')
		FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, outbox).Scan(&names, &types)
	if err != nil {
		return nil, nil, fmt.Errorf("read the columns of %s: %w", outbox, err)
	}
	return names, types, nil
}
