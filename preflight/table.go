package preflight

import (
	"cmp"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// TableCheck is what [CheckTable] found of one table.
type TableCheck struct {
	// Problems are the table's problems, in the order the checks ran.
	Problems []Problem
	// Fit says the table's columns fit the config, as the decoder would
	// find them: a sample row can be decoded.
	Fit bool
	// Order is the ORDER BY that finds the newest row: by the column By,
	// descending, or "ctid DESC" (the physical order) when By is "".
	Order string
	// By is the config's timestamp column, else its id column, else "".
	By string
}

// CheckTable checks one table of a config against the database, without
// changing anything: the table exists and is a table; every column the
// config names exists with a type the relay can use; the write-back
// values fit the status column; the decoder accepts the columns
// ([decoder.Mapping.CheckColumns], asked only when all that passed, since
// it would repeat one of those problems); the publication names.Publication
// includes the table; a table whose write-back lists pending values has
// the reset trigger `cdc-relay migrate` creates. Each problem names the table, and the column when there is one.
// It does not check that the publication exists: [CheckDatabase] and
// [CheckTables] do, once for every table. The error is for a database that
// could not be asked.
func CheckTable(ctx context.Context, q pgdb.Querier, names Names, t outbox.Table) (TableCheck, error) {
	var res TableCheck
	m := t.Mapping
	ident := pgx.Identifier{m.Schema, m.Table}.Sanitize()
	if p, err := checkRelation(ctx, q, t.Name(), ident); err != nil || p != nil {
		if p != nil {
			res.Problems = append(res.Problems, *p)
		}
		return res, err
	}
	cols, err := tableColumns(ctx, q, ident)
	if err != nil {
		return res, fmt.Errorf("read the columns of %s: %w", t.Name(), err)
	}
	res.Problems = append(res.Problems, checkColumnTypes(t, cols)...)
	values, err := checkStatusValues(ctx, q, t, cols)
	if err != nil {
		return res, err
	}
	res.Problems = append(res.Problems, values...)
	zone, err := checkTimeZone(ctx, q, t)
	if err != nil {
		return res, err
	}
	if zone != nil {
		res.Problems = append(res.Problems, *zone)
	}
	if len(res.Problems) == 0 {
		if p := checkDecoderColumns(t, cols); p != nil {
			res.Problems = append(res.Problems, *p)
		}
	}
	res.Fit = len(res.Problems) == 0
	res.By = cmp.Or(t.Mapping.TimestampColumn, t.Mapping.IDColumn)
	if res.By != "" {
		res.Order = pgx.Identifier{res.By}.Sanitize() + " DESC NULLS LAST"
	} else {
		res.Order = "ctid DESC"
	}
	p, err := checkPublished(ctx, q, names.Publication, t)
	if p != nil {
		res.Problems = append(res.Problems, *p)
	}
	if err != nil {
		return res, err
	}
	p, err = checkResetTrigger(ctx, q, names, t, cols)
	if p != nil {
		res.Problems = append(res.Problems, *p)
	}
	return res, err
}

// checkRelation returns a problem of table name when ident does not exist
// (or the role may not see it) or is not a table.
func checkRelation(ctx context.Context, q pgdb.Querier, name, ident string) (*Problem, error) {
	var kind *string
	if err := q.QueryRow(ctx, "SELECT (SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1))", ident).Scan(&kind); err != nil {
		return nil, fmt.Errorf("look up table %s: %w", name, err)
	}
	switch {
	case kind == nil:
		return &Problem{Table: name, Msg: "the table does not exist (or this role may not see it): fix table: in the config, or create the table"}, nil
	case *kind != "r" && *kind != "p":
		return &Problem{Table: name, Msg: fmt.Sprintf("is not a table (relkind %s): the relay reads the inserts into a table; name the table in table:", *kind)}, nil
	}
	return nil, nil
}
