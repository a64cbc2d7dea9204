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

// CheckAdopt plans t's adopt predicates (its own and its routes', for
// each publisher its events go to: outbox.Table.Adoptables) as the relay
// runs them when it creates its slot (status.CheckAdopt, an EXPLAIN that
// runs nothing), with the session's role, and returns PostgreSQL's first
// refusal as a problem, which names the predicate refused (a route's, a
// publisher's own); nil without adopt. Predicates given per publisher that
// leave a publisher out are the config file's problems, not this one's.
// For `check-config` only: `run --config` does not ask at start-up,
// since after the switch-over the predicate is never run again and its
// role need not be able to; the first run, which creates the slot, plans
// it then (slot.CheckAdopt) and stops on a refusal. The error is for a
// database that could not be asked.
func CheckAdopt(ctx context.Context, q pgdb.Querier, t outbox.Table) (*Problem, error) {
	if !t.Adopts() {
		return nil, nil
	}
	for _, a := range t.Adoptables(t.Name()) {
		a.Pending, a.StatusColumn = nil, "" // the migrations' and the column checks'
		if p, err := refusedAdopt(t, status.CheckAdopt(ctx, q, a)); p != nil || err != nil {
			return p, err
		}
	}
	return nil, nil
}

// refusedAdopt is err, status.CheckAdopt's answer for t, as a problem: nil
// when PostgreSQL accepts the predicates; an error when it could not be
// asked.
func refusedAdopt(t outbox.Table, err error) (*Problem, error) {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &pgErr):
		return nil, err
	}
	msg := strings.TrimPrefix(err.Error(), "adopt the rows of "+t.Name()+": ")
	name, fix := "adopt", "adopt:"
	// status.CheckAdopt names the predicate refused when there are several,
	// or when it is a publisher's own: adopt.partner, routes[1].adopt (topic
	// u), routes[1].adopt.partner (topic u).
	if n, rest, ok := strings.Cut(msg, ": "); ok && (n == "adopt" || strings.HasPrefix(n, "adopt.") || strings.HasPrefix(n, "routes[")) {
		msg, name = rest, n
		route := strings.HasPrefix(n, "routes[")
		_, after, own := strings.Cut(n, "adopt.")
		publisher, _, _ := strings.Cut(after, " ")
		switch {
		case route && own:
			fix = "the " + publisher + " entry of the route's adopt:"
		case own:
			fix = "the " + publisher + " entry of adopt:"
		case route:
			fix = "the route's adopt:"
		}
	}
	return &Problem{Table: t.Name(), Msg: name + ": PostgreSQL refuses the predicate: " + msg + ": fix " + fix + " in the config"}, nil
}
