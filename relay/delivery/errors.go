package delivery

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// refused reports whether a status-table error will not go away by
// itself: SQLSTATE class 42 (a missing table or column, a missing
// privilege).
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && len(pgErr.Code) == 5 && pgErr.Code[:2] == "42"
}

// storeCause names a status-table error for the cause log: its SQLSTATE,
// or the connection (never anything of the event, which would make every
// event a cause of its own).
func storeCause(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "status table: SQLSTATE " + pgErr.Code
	}
	return "status table: no connection"
}

// PublisherError is an error of a publisher beside Kafka (a webhook's
// lanes): whatever its text says (a receiver's answer, quoted), it is
// never Kafka's refusal of the producer, which ends the session.
type PublisherError interface {
	error
	// FromPublisher names the publisher.
	FromPublisher() string
}

// FromPublisher reports whether err is a PublisherError.
func FromPublisher(err error) bool {
	var pe PublisherError
	return errors.As(err, &pe)
}

// IsBehind reports whether err is a publisher's outcome for a record it
// did not send because its receiver answers more slowly than the events
// arrive (a webhook's lanes: an error with a Behind method that says
// so). Parked for the publisher's poller, such a record is behind, not
// failing: counted under reason Slow, and logged as waiting.
func IsBehind(err error) bool {
	var b interface{ Behind() bool }
	return errors.As(err, &b) && b.Behind()
}

// ErrSendAgain is a producer's outcome for a record refused with the
// request it was in (a webhook's batch): at-least-once delivery sends it
// again alone, as a record Kafka refused with its batch, to learn whether
// it was its own fault.
var ErrSendAgain = errors.New("refused with its batch: sent again alone")

// ErrNotSent is a producer's outcome for a record it did not send because
// an earlier record of its key was refused, or parked meanwhile (the
// lanes of a publisher that is not Kafka): at-least-once delivery takes it
// as a record refused with its batch, which goes again alone and is
// parked behind its key's parked record, in order.
var ErrNotSent = errors.New("not sent: an earlier event of its key was parked")
