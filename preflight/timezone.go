package preflight

import (
	"context"
	"fmt"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// checkTimeZone returns a problem of t when its time_zone is a name
// PostgreSQL does not know: write-back writes its timestamp columns
// without time zone with `now() AT TIME ZONE '<zone>'`, which PostgreSQL
// would refuse on every row. A table without time_zone has none.
func checkTimeZone(ctx context.Context, q pgdb.Querier, t outbox.Table) (*Problem, error) {
	zone := t.Mapping.TimeZone
	if zone == "" {
		return nil, nil
	}
	var known bool
	if err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = $1)", zone).Scan(&known); err != nil {
		return nil, fmt.Errorf("look up time zone %q: %w", zone, err)
	}
	if known {
		return nil, nil
	}
	return &Problem{Table: t.Name(), Msg: fmt.Sprintf(
		"time_zone %q is not a zone this PostgreSQL knows (pg_timezone_names): name one both know, such as America/New_York", zone)}, nil
}
