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
	// ErrorColumn, if set, takes why the event was parked, with Failed or
	// Dead.
	ErrorColumn string
	// Dead, if set, is the status value of an event given up on (DEAD in
	// the relay's status table: a row that cannot become a record, the
	// poller's last attempt failed, `failed purge`); "" takes Failed.
	Dead string
	// AttemptsColumn, if set (an integer column), takes the failed
	// delivery attempts so far, as a retry_count column counts them: left
	// alone for an event delivered at once, 1 once it is parked, one more
	// for each attempt of the poller that fails, and the failed ones when
	// the poller delivers it.
	AttemptsColumn string
	// NextAttemptColumn, if set (a timestamp column), takes when the
	// poller tries a parked event next; left alone otherwise.
	NextAttemptColumn string
	// Pending are the status values that mean "not delivered yet" (the
	// value a new row takes, and an old poller's in-between states, such
	// as PENDING and PROCESSING). A row whose status is set back to one of
	// them is sent again; rows with one of them when the relay's slot is
	// created are adopted and sent once. Empty: neither.
	Pending []string
}

// DeadValue is the status value of an event given up on: Dead, or Failed
// when Dead is not set.
func (c *Columns) DeadValue() string {
	if c.Dead != "" {
		return c.Dead
	}
	return c.Failed
}
