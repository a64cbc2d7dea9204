package preflight

import (
	"context"
	"fmt"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// checkResetTrigger returns a problem of table t when its write-back lists
// pending values and the table lacks the reset trigger `cdc-relay migrate`
// creates, or has one that would not send the event again as the config
// asks (another function, other arguments, disabled, made for other
// values). It reads pg_trigger only. A table without the status column is
// left to checkColumnTypes, which reports the column missing.
func checkResetTrigger(ctx context.Context, q pgdb.Querier, names Names, t outbox.Table, cols []column) (*Problem, error) {
	wb := t.WriteBack
	if wb == nil || len(wb.Pending) == 0 {
		return nil, nil
	}
	if _, ok := columnsByName(cols)[wb.StatusColumn]; !ok {
		return nil, nil
	}
	m := t.Mapping
	cfg := names.migrations(m.Schema, m.Table, migrations.Reset{IDColumn: m.IDColumn, StatusColumn: wb.StatusColumn, Pending: wb.Pending,
		FromPending: wb.RetryingIsPending(), Publishers: t.AllPublishers()}) // as setup's resetOf
	have, err := migrations.LookupResetTrigger(ctx, q, cfg)
	if err != nil {
		return nil, err
	}
	var what string
	switch {
	case !have.Exists:
		what = "no reset trigger"
	case have.Stale != "":
		what = "a reset trigger that " + have.Stale
	default:
		return nil, nil
	}
	path := names.ConfigPath
	if path == "" {
		path = "FILE"
	}
	return &Problem{Table: t.Name(), Column: wb.StatusColumn, Msg: fmt.Sprintf(
		"has pending values but %s: run `cdc-relay migrate --config %s` as the table's owner; until then, setting a row's status back to a pending value does not send its event again",
		what, path)}, nil
}
