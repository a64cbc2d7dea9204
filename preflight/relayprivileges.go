package preflight

// RelayPrivileges are the privileges every relay's role needs on the
// relay's own tables, whatever its options: writing the status table (and
// numbering its rows) and the checkpoint table, reading the table of
// paused topics. Each table is a quoted name ("schema"."table").
func RelayPrivileges(statusTable, checkpointTable, pauseTable string) []Privilege {
	return []Privilege{
		{Table: statusTable, What: "the status table", Need: []string{"SELECT", "INSERT", "UPDATE"}},
		{Table: statusTable, What: "the sequence of the status table's id, which parking an event takes a number from",
			SerialColumn: "id", Need: []string{"USAGE"}},
		{Table: checkpointTable, What: "the checkpoint table", Need: []string{"SELECT", "INSERT", "UPDATE"}},
		{Table: pauseTable, What: "the table of paused topics", Need: []string{"SELECT"}},
	}
}
