package preflight

import (
	"context"
	"fmt"
	"strings"
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

// privilegesMissing returns which of the privileges $2 the session's role
// lacks on the table $1, or, with a column $3, on the sequence of that
// column; none when the table (or the sequence) does not exist.
const privilegesMissing = `SELECT coalesce(array_agg(p ORDER BY o), '{}') FROM unnest($2::text[]) WITH ORDINALITY AS n(p, o)
	WHERE to_regclass($1) IS NOT NULL AND CASE WHEN $3 = '' THEN NOT has_table_privilege(to_regclass($1), p)
		ELSE pg_get_serial_sequence($1, $3) IS NOT NULL AND NOT has_sequence_privilege(pg_get_serial_sequence($1, $3), p) END`

// CheckPrivileges checks that the session's role has every privilege
// needed (by has_table_privilege, so a grant to a role it inherits
// counts) and returns a problem for each table where it lacks some, naming
// them and saying how to grant them. A table that does not exist is
// migrations.Check's to report: it is passed over here. It reads the
// catalogs only.
func CheckPrivileges(ctx context.Context, q Querier, needs []Privilege) ([]Problem, error) {
	var problems []Problem
	for _, n := range needs {
		var missing []string
		err := q.QueryRow(ctx, privilegesMissing, n.Table, n.Need, n.SerialColumn).Scan(&missing)
		if err != nil {
			return nil, fmt.Errorf("check the privileges on %s: %w", n.Table, err)
		}
		if len(missing) > 0 {
			problems = append(problems, Problem{Table: n.Table, Msg: fmt.Sprintf(
				"the relay's role lacks %s on it (%s): grant it as an administrator (`cdc-relay migrate --print-grants <role>` prints the SQL)",
				strings.Join(missing, ", "), n.What)})
		}
	}
	return problems, nil
}
