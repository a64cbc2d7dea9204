package pubwatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
)

// unfit judges a Relation message for the outbox table whose columns do
// not fit the mapping. The decoder parks each row of it (Message.Poison),
// so the stream never stops on a schema of the past: PostgreSQL sends the
// Relation of the rows it streams, as the table was when they were
// written, again after every restart until the slot passes them.
//
// A timestamp column of an unusable type only parks rows, FAILED: the
// poller sends them with the time of delivery. A missing required column
// (or an expected optional one: see ExpectedMappings) (renamed or dropped) ends the
// session when the table lacks it now too, so that the operator maps it
// or renames it back instead of finding every later row parked; when the
// table has it again, the rows written without it are parked.
func (w *tableWatch) unfit(ctx context.Context, me *decoder.MappingError) error {
	if me.Missing == "" {
		if me.Timestamp {
			w.log.Warn("the outbox table's rows are parked FAILED in the status table while its timestamp column's type does not fit the mapping; "+
				"the poller sends them with the time of delivery as their timestamp, in their keys' order", "reason", me)
			return nil
		}
		w.log.Warn("the outbox table's rows are parked in the status table until its schema fits the mapping again", "reason", me)
		return nil
	}
	names, types, err := tableColumns(ctx, w.db, w.mapping.Schema, w.mapping.Table)
	if err != nil {
		return err
	}
	var now *decoder.MappingError
	if errors.As(w.mapping.CheckColumns(names, types), &now) && now.Missing != "" {
		return fatal.Error{Err: fmt.Errorf("%w. The relay stopped before the first row without it; rows inserted since wait in the WAL: "+
			"once the column is mapped they are relayed, and if it is renamed back they are parked in the status table "+
			"(they stay in the outbox table, for `cdc-relay recover --since TIME`)", now)}
	}
	if me.Timestamp {
		w.log.Warn("rows written while the outbox table lacked its timestamp column are parked FAILED in the status table; the poller sends them with the time of delivery", "reason", me)
		return nil
	}
	w.log.Warn("rows written while the outbox table lacked a column are parked in the status table; they stay in the outbox table, for `cdc-relay recover --since TIME`",
		"reason", me)
	return nil
}
