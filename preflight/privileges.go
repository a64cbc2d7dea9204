package preflight

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// Privilege is what the relay's role needs on one table: the table as a
// quoted name ("schema"."table"), what it is to the relay (the status
// table, ...), and the privileges (SELECT, INSERT, ...). With
// SerialColumn, it is what the role needs on the sequence of that serial
// or identity column of the table (USAGE, to insert a row) instead.
type Privilege struct {
	Table, What  string
	SerialColumn string
	Need         []string
}

// privilegesMissing returns the session's role (current_user), the
// object to grant on (the table $1, or the sequence of its column $3),
// and which of the privileges $2 the role lacks on it; none when the
// table (or the sequence) does not exist.
const privilegesMissing = `SELECT current_user::text,
		CASE WHEN to_regclass($1) IS NULL THEN '' WHEN $3 = '' THEN $1 ELSE coalesce(pg_get_serial_sequence($1, $3), '') END,
		coalesce(array_agg(p ORDER BY o), '{}') FROM unnest($2::text[]) WITH ORDINALITY AS n(p, o)
	WHERE to_regclass($1) IS NOT NULL AND CASE WHEN $3 = '' THEN NOT has_table_privilege(to_regclass($1), p)
		ELSE pg_get_serial_sequence($1, $3) IS NOT NULL AND NOT has_sequence_privilege(pg_get_serial_sequence($1, $3), p) END`

// CheckPrivileges checks that the session's role has every privilege
// needed (by has_table_privilege, so a grant to a role it inherits
// counts) and returns a problem for each table where it lacks some,
// naming them with the GRANT that gives them to the role (current_user;
// also in Problem.Grant),
// and the command that prints every grant the relay's role needs. A table
// that does not exist is migrations.Check's to report: it is passed over
// here. It reads the catalogs only.
func CheckPrivileges(ctx context.Context, q pgdb.Querier, needs []Privilege) ([]Problem, error) {
	var problems []Problem
	for _, n := range needs {
		var role, object string
		var missing []string
		err := q.QueryRow(ctx, privilegesMissing, n.Table, n.Need, n.SerialColumn).Scan(&role, &object, &missing)
		if err != nil {
			return nil, fmt.Errorf("check the privileges on %s: %w", n.Table, err)
		}
		if len(missing) > 0 {
			if n.SerialColumn != "" {
				object = "SEQUENCE " + object
			}
			grant := fmt.Sprintf("GRANT %s ON %s TO %s;", strings.Join(missing, ", "), object, pgx.Identifier{role}.Sanitize())
			problems = append(problems, Problem{Table: n.Table, Grant: grant, Msg: fmt.Sprintf(
				"the relay's role lacks %s on it (%s): as an administrator, run %s (`%s` prints every grant the relay's role needs)",
				strings.Join(missing, ", "), n.What, grant, pgerr.PrintGrants(role))})
		}
	}
	return problems, nil
}
