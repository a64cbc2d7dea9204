package outbox

import (
	"log/slog"

	"github.com/cdc-relay/cdc-relay/writeback"
)

// WriteBackTables returns the tables of tables that write back, as package
// writeback names them, and for each of tables its index among them, or -1
// when it does not write back.
func WriteBackTables(tables []Table) ([]writeback.Table, []int) {
	var wb []writeback.Table
	index := make([]int, len(tables))
	for i, t := range tables {
		index[i] = -1
		if t.WriteBack == nil {
			continue
		}
		index[i] = len(wb)
		wb = append(wb, writeback.Table{
			Schema: t.Mapping.Schema, Name: t.Mapping.Table, IDColumn: t.Mapping.IDColumn, Columns: *t.WriteBack, TimeZone: t.Mapping.TimeZone})
	}
	return wb, index
}

// WriteBackRows returns what writes the later outcomes of parked events to
// the rows of the tables that write back (status.WriteBack), or nil when
// none does.
func WriteBackRows(tables []Table, log *slog.Logger) (*writeback.Rows, error) {
	wb, _ := WriteBackTables(tables)
	if len(wb) == 0 {
		return nil, nil
	}
	return writeback.NewRows(wb, log)
}
