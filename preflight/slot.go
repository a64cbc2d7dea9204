package preflight

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// checkSlot returns a problem when the slot exists but the relay cannot
// read it: a physical slot, another plugin than pgoutput, or a slot of
// another database. A missing slot is none: the relay creates it.
func checkSlot(ctx context.Context, q pgdb.Querier, slot string) (*Problem, error) {
	var plugin, slotType, db, current string
	err := q.QueryRow(ctx, `SELECT coalesce(plugin, ''), slot_type, coalesce(database, ''), current_database()
		FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&plugin, &slotType, &db, &current)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("look up replication slot %q: %w", slot, err)
	case slotType != "logical" || plugin != "pgoutput":
		kind := "physical"
		if slotType == "logical" {
			kind = "the " + plugin + " plugin"
		}
		return &Problem{Msg: fmt.Sprintf(
			"replication slot %q uses %s, the relay reads pgoutput: name another slot (slot: in the file, or --slot), or drop this one (SELECT pg_drop_replication_slot('%s')) if nothing else reads it",
			slot, kind, slot)}, nil
	case db != current:
		return &Problem{Msg: fmt.Sprintf(
			"replication slot %q belongs to database %q, not to %q, the one the URL names: name another slot, or connect to %q", slot, db, current, db)}, nil
	}
	return nil, nil
}
