package preflight

// Problem is one way the database does not fit a config: the table it
// concerns ("" for the database as a whole), the column ("" when none),
// and what is wrong and what to do, in a sentence that names both.
type Problem struct {
	Table, Column, Msg string
	// Grant, when set, is the SQL statement that fixes it, run as the
	// database's administrator (CheckPrivileges).
	Grant string
}

// String is the problem as check-config prints it: the table, if any, then
// the message.
func (p Problem) String() string {
	if p.Table == "" {
		return p.Msg
	}
	return p.Table + ": " + p.Msg
}
