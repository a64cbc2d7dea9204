package preflight

import (
	"context"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// CheckTables checks each table of a config against the database, as
// `cdc-relay run --config` does at start: the publication
// names.Publication exists and publishes inserts, then [CheckTable] for
// each table. It returns every
// problem found, each naming the table, the column and what to do, in the
// order of the tables; the error is for a database that could not be
// asked.
func CheckTables(ctx context.Context, q pgdb.Querier, names Names, tables []outbox.Table) ([]Problem, error) {
	var problems []Problem
	if p, err := checkPublication(ctx, q, names.Publication); err != nil {
		return nil, err
	} else if p != nil {
		problems = append(problems, *p)
	}
	for _, t := range tables {
		res, err := CheckTable(ctx, q, names, t)
		if err != nil {
			return nil, err
		}
		problems = append(problems, res.Problems...)
	}
	return problems, nil
}
