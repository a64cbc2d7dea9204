package writeback

// Columns says which columns of an outbox table take a delivery's outcome,
// and the values they take. StatusColumn, Delivered and Failed are
// required; the others are optional ("" leaves that column alone).
type Columns struct {
	// StatusColumn takes Delivered once the event is in Kafka, or Failed
	// once it was parked in the relay's status table.
	StatusColumn string
	// Delivered and Failed are the status values, as the column's type
	// reads them from text ("DELIVERED", "SENT", "published").
	Delivered, Failed string
	// DeliveredAtColumn, if set, takes now() with Delivered.
	DeliveredAtColumn string
	// ErrorColumn, if set, takes why the event was parked, with Failed.
	ErrorColumn string
}
