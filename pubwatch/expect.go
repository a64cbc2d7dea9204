package pubwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// ExpectedMappings returns the session's mappings, table i at index i,
// and the columns each now expects: each optional column the mapping
// names (the id, topic, headers and timestamp columns) that the table has
// now, or had when an earlier session of the relay's slot started
// (expected, the Run's, and the checkpoint row's publication marks), is
// expected of every Relation the stream sends (decoder.Mapping.Expecting).
// So a column renamed or dropped while the relay runs parks the rows
// written without it and stops the relay while the table lacks it (see
// tableWatch.unfit), rather than sending them without their id, to
// another topic, or without their headers or timestamp; and a restart
// while it lacks it is refused, with the same message, a [fatal.Error]. A
// named optional column the table lacks and never had is warned of, with
// the flags that map it or say there is none. The expected columns are
// returned on an error too, as far as they were found.
func ExpectedMappings(ctx context.Context, db pgdb.DB, cfg Config, expected [][]string) ([]decoder.Mapping, [][]string, error) {
	stored, err := storedColumns(ctx, cfg)
	if err != nil {
		return nil, expected, err
	}
	ms, err := WithNotNull(ctx, db, cfg.Tables)
	if err != nil {
		return nil, expected, err
	}
	if len(expected) != len(ms) {
		expected = make([][]string, len(ms))
	} else {
		expected = slices.Clone(expected)
	}
	for i, m := range ms {
		names, types, err := tableColumns(ctx, db, m.Schema, m.Table)
		if err != nil {
			return nil, expected, err
		}
		if len(names) == 0 {
			continue // no such table: the table watch says so
		}
		had := append(slices.Clone(expected[i]), stored[markKey(cfg, i)]...)
		ms[i] = m.Expecting(append(had, names...))
		var me *decoder.MappingError
		if errors.As(ms[i].CheckColumns(names, types), &me) && me.Missing != "" && slices.Contains(had, me.Missing) {
			return nil, expected, fatal.Error{Err: fmt.Errorf("%w. The table had it when the relay last started on slot %q: rows written without it would go out without it. "+
				"Rows inserted since wait in the WAL: once the column is mapped they are relayed, and if it is renamed back they are parked in the status table "+
				"(they stay in the outbox table, for `cdc-relay recover --since TIME`)", me, cfg.Slot)}
		}
		expected[i] = ms[i].Expected()
		if lacks := lacking(m.OptionalColumns(), names); len(lacks) > 0 {
			cfg.Log.Warn("the outbox table lacks optional columns the mapping names: its events go without them; "+
				"map the columns that hold them, or map them to '' to say there are none (--id-column '', --topic-column '', --headers-column '', --timestamp-column '')",
				"table", m.Schema+"."+m.Table, "columns", strings.Join(lacks, ", "))
		}
	}
	return ms, expected, nil
}

// storedColumns returns the expected columns of each outbox table that
// the checkpoint row's publication marks keep, by markKey; none when it
// keeps none or cannot be read (previousMarks warns of that).
func storedColumns(ctx context.Context, cfg Config) (map[string][]string, error) {
	raw, err := cfg.Store.PublicationMarks(ctx, cfg.Slot)
	if err != nil || raw == "" {
		return nil, err
	}
	var stored map[string]storedMark
	if json.Unmarshal([]byte(raw), &stored) != nil {
		return nil, nil
	}
	out := make(map[string][]string, len(stored))
	for k, m := range stored {
		out[k] = m.Columns
	}
	return out, nil
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
func tableColumns(ctx context.Context, db pgdb.DB, schema, name string) ([]string, []uint32, error) {
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
