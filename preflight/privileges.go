package preflight

import (
	"context"
	"fmt"
	"strings"
)

// Privilege is what the relay's role needs on one table: the table as a
// quoted name ("schema"."table"), what it is to the relay (the status
// table, ...), and the privileges (SELECT, INSERT, ...).
type Privilege struct {
	Table, What string
	Need        []string
}

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
		err := q.QueryRow(ctx, `SELECT coalesce(array_agg(p ORDER BY o), '{}') FROM unnest($2::text[]) WITH ORDINALITY AS n(p, o)
			WHERE to_regclass($1) IS NOT NULL AND NOT has_table_privilege(to_regclass($1), p)`, n.Table, n.Need).Scan(&missing)
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
