package outbox

import (
	"log/slog"
	"slices"

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

// SharedWriteBack names the tables of tables (Table.Name) that write back
// and send their events to a publisher beside Kafka: each publisher parks
// its own copy of an event, and the event's row says what every copy
// allows (status.SharedWriteBack).
func SharedWriteBack(tables []Table) []string {
	var names []string
	for _, t := range tables {
		if t.WriteBack == nil {
			continue
		}
		if slices.ContainsFunc(t.AllPublishers(), func(p string) bool { return p != KafkaPublisher }) {
			names = append(names, t.Name())
		}
	}
	return names
}
