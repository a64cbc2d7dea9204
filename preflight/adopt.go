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

// CheckAdopt plans t's adopt predicates (its own and its routes') as the
// relay runs them when it creates its slot (status.CheckAdopt, an EXPLAIN
// that runs nothing), with the session's role, and returns PostgreSQL's
// refusal as a problem, which names the route predicate refused; nil
// without adopt. For `check-config` only: `run --config` does not ask
// at start-up, since after the switch-over the predicate is never run
// again and its role need not be able to; the first run, which creates
// the slot, plans it then (slot.CheckAdopt) and stops on a refusal. The
// error is for a database that could not be asked.
func CheckAdopt(ctx context.Context, q pgdb.Querier, t outbox.Table) (*Problem, error) {
	if !t.Adopts() {
		return nil, nil
	}
	m := t.Mapping
	a := status.Adoptable{Schema: m.Schema, Name: m.Table, Source: t.Name(), IDColumn: m.IDColumn,
		Where: t.Adopt, TagsColumn: m.TagsColumn, Routes: m.Routes, RouteWhere: t.RouteAdopt}
	err := status.CheckAdopt(ctx, q, a)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &pgErr):
		return nil, err
	}
	msg := strings.TrimPrefix(err.Error(), "adopt the rows of "+t.Name()+": ")
	name, fix := "adopt", "adopt:"
	// A table with route predicates: status.CheckAdopt names the one refused.
	if n, rest, ok := strings.Cut(msg, ": "); ok && (n == "adopt" || strings.HasPrefix(n, "routes[")) {
		msg = rest
		if n != "adopt" {
			name, fix = n, "the route's adopt:"
		}
	}
	return &Problem{Table: t.Name(), Msg: name + ": PostgreSQL refuses the predicate: " + msg + ": fix " + fix + " in the config"}, nil
}
