package preflight

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/status"
)

// CheckAdopt plans t's adopt predicate as the relay runs it when it
// creates its slot (status.CheckAdopt, an EXPLAIN that runs nothing),
// with the session's role, and returns PostgreSQL's refusal as a problem;
// nil without adopt. For `check-config` only: `run --config` does not ask
// at start-up, since after the switch-over the predicate is never run
// again and its role need not be able to; the first run, which creates
// the slot, plans it then (slot.CheckAdopt) and stops on a refusal. The
// error is for a database that could not be asked.
func CheckAdopt(ctx context.Context, q pgdb.Querier, t outbox.Table) (*Problem, error) {
	if t.Adopt == "" {
		return nil, nil
	}
	m := t.Mapping
	a := status.Adoptable{Schema: m.Schema, Name: m.Table, Source: t.Name(), IDColumn: m.IDColumn,
		Where: t.Adopt, TagsColumn: m.TagsColumn, Routes: m.Routes}
	err := status.CheckAdopt(ctx, q, a)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &pgErr):
		return nil, err
	}
	msg := strings.TrimPrefix(err.Error(), "adopt the rows of "+t.Name()+": ")
	return &Problem{Table: t.Name(), Msg: "adopt: PostgreSQL refuses the predicate: " + msg + ": fix adopt: in the config"}, nil
}
