package outboxrow

import "time"

// State is what became of a parked event, as its row is to say it.
type State int

const (
	// Delivered: the poller, or a retry, delivered the event.
	Delivered State = iota
	// Failed: the event is parked, due again at Outcome.NextAttempt.
	Failed
	// Dead: the event was given up on.
	Dead
)

// Outcome is what a parked event's row is to say.
type Outcome struct {
	State State
	// Reason is why the event failed or was given up on, for the error
	// column (Failed, Dead); "" leaves the column alone.
	Reason string
	// Attempts is the failed delivery attempts so far, for the attempts
	// column; negative leaves the column alone.
	Attempts int
	// NextAttempt is when the poller tries the event next, for the
	// next-attempt column (Failed); zero leaves the column alone.
	NextAttempt time.Time
	// Attempted says that the outcome is that of a delivery attempt made
	// now (not an operator's retry, skip or purge), for the last-attempt
	// column.
	Attempted bool
}

// RowOutcome is the outcome O for the outbox row whose id column reads ID
// (as text).
type RowOutcome struct {
	ID string
	O  Outcome
}
