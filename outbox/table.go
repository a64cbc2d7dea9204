package outbox

import (
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// Table is one outbox table the relay streams.
type Table struct {
	// Mapping maps its rows onto Kafka records.
	Mapping decoder.Mapping
	// WriteBack, if set, writes each event's outcome back to its row.
	WriteBack *writeback.Columns
	// Adopt, if set, is an SQL predicate over the table's columns (a
	// config file's adopt:, `migrate --adopt`): when the relay creates
	// its slot, and has never recorded one, the rows it selects as of the
	// slot's exported snapshot are adopted and sent by the poller, with
	// the rows of a pending status, none twice by the switch. It is SQL
	// run as it is, with the role that creates the slot. It needs the id
	// column, by which the poller reads each row.
	Adopt string
}
