package preflight

import (
	"context"
	"errors"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// CheckDatabase checks what a config's tables share: wal_level is
// logical, the slot (if it exists) is a pgoutput slot of this database,
// and the publication exists and publishes inserts. It returns every
// problem found, in that order; the error is for a database that could not
// be asked (a deadline or a cancellation among them).
func CheckDatabase(ctx context.Context, q pgdb.Querier, slot, publication string) ([]Problem, error) {
	var problems []Problem
	if err := migrations.CheckWALLevel(ctx, q); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, err
		}
		problems = append(problems, Problem{Msg: err.Error()})
	}
	if p, err := checkSlot(ctx, q, slot); err != nil {
		return nil, err
	} else if p != nil {
		problems = append(problems, *p)
	}
	if p, err := checkPublication(ctx, q, publication); err != nil {
		return nil, err
	} else if p != nil {
		problems = append(problems, *p)
	}
	return problems, nil
}
