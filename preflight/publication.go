package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// checkPublication returns a problem when the publication is missing or
// does not publish inserts.
func checkPublication(ctx context.Context, q pgdb.Querier, publication string) (*Problem, error) {
	var inserts bool
	err := q.QueryRow(ctx, "SELECT pubinsert FROM pg_publication WHERE pubname = $1", publication).Scan(&inserts)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return &Problem{Msg: fmt.Sprintf("publication %q does not exist: create it for the tables, as CREATE PUBLICATION %s FOR TABLE ... WITH (publish = 'insert')",
			publication, pgx.Identifier{publication}.Sanitize())}, nil
	case err != nil:
		return nil, fmt.Errorf("look up publication %q: %w", publication, err)
	case !inserts:
		return &Problem{Msg: fmt.Sprintf("publication %q does not publish inserts, which are all the relay reads: ALTER PUBLICATION %s SET (publish = 'insert')",
			publication, pgx.Identifier{publication}.Sanitize())}, nil
	}
	return nil, nil
}

// checkPublished returns a problem of table t when an existing publication
// does not include it, publishes a partitioned table under the names of
// its partitions, or publishes it with a row filter or a column list that
// leaves out a column the mapping reads (PostgreSQL 15+). A missing
// publication, or one that does not publish inserts, is none here:
// checkPublication says so, once for every table.
func checkPublished(ctx context.Context, q pgdb.Querier, publication string, t outbox.Table) (*Problem, error) {
	m := t.Mapping
	pub, err := migrations.LookupPublication(ctx, q, migrations.Config{OutboxSchema: m.Schema, OutboxTable: m.Table, Publication: publication})
	if err != nil {
		return nil, err
	}
	switch {
	case !pub.Exists:
	case pub.Partitioned && !pub.ViaRoot:
		return &Problem{Table: t.Name(), Msg: fmt.Sprintf(
			"publication %q publishes this partitioned table's rows under the names of its partitions, which the relay does not read: %s (it changes what every subscriber of the publication receives)",
			publication, migrations.ViaRootFix(publication))}, nil
	case !pub.HasTable:
		return &Problem{Table: t.Name(), Msg: fmt.Sprintf("publication %q does not include the table: ALTER PUBLICATION %s ADD TABLE %s",
			publication, pgx.Identifier{publication}.Sanitize(), pgx.Identifier{m.Schema, m.Table}.Sanitize())}, nil
	case pub.RowFilter != "":
		return &Problem{Table: t.Name(), Msg: fmt.Sprintf(
			"publication %q publishes the table with a row filter, WHERE %s: the rows it leaves out would never reach Kafka; publish the whole table: %s",
			publication, pub.RowFilter, migrations.RepublishFix(publication, m.Schema, m.Table))}, nil
	}
	if hidden := pub.Hides(m.Columns()); len(hidden) > 0 {
		return &Problem{Table: t.Name(), Column: hidden[0], Msg: fmt.Sprintf(
			"publication %q publishes only some of the table's columns (a column list), leaving out %s, which the config maps: events would lose them; publish every column: %s",
			publication, strings.Join(hidden, ", "), migrations.RepublishFix(publication, m.Schema, m.Table))}, nil
	}
	return nil, nil
}
