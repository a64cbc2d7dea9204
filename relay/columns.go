package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// unfit judges a Relation message for the outbox table whose columns do
// not fit the mapping. The decoder parks each row of it (Message.Poison),
// so the stream never stops on a schema of the past: PostgreSQL sends the
// Relation of the rows it streams, as the table was when they were
// written, again after every restart until the slot passes them.
//
// A timestamp column of an unusable type only parks rows: the type may
// change back. A missing required column (renamed or dropped) ends the
// session when the table lacks it now too, so that the operator maps it
// or renames it back instead of finding every later row parked; when the
// table has it again, the rows written without it are parked.
func (w *tableWatch) unfit(ctx context.Context, me *decoder.MappingError) error {
	if me.Missing == "" {
		w.log.Warn("the outbox table's rows are parked in the status table until its schema fits the mapping again", "reason", me)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	outbox := pgx.Identifier{w.mapping.Schema, w.mapping.Table}.Sanitize()
	var names []string
	var types []uint32
	err := w.db.QueryRow(ctx, `SELECT coalesce(array_agg(attname::text ORDER BY attnum), '{}'), coalesce(array_agg(atttypid ORDER BY attnum), '{}')
		FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, outbox).Scan(&names, &types)
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", outbox, err)
	}
	var now *decoder.MappingError
	if errors.As(w.mapping.CheckColumns(names, types), &now) && now.Missing != "" {
		return fatalError{fmt.Errorf("%w. The relay stopped before the first row without it; rows inserted since wait in the WAL: "+
			"once the column is mapped they are relayed, and if it is renamed back they are parked in the status table "+
			"(they stay in the outbox table, for `cdc-relay recover --since TIME`)", now)}
	}
	w.log.Warn("rows written while the outbox table lacked a column are parked in the status table; they stay in the outbox table, for `cdc-relay recover --since TIME`",
		"reason", me)
	return nil
}
