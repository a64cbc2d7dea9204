package checkpoint

import (
	"time"

	"github.com/jackc/pglogrepl"
)

// Position is a stream position with a time no transaction after it
// committed before: what `cdc-relay recover` needs to find, by their
// timestamp column, the rows of the transactions after the position.
type Position struct {
	LSN pglogrepl.LSN
	// CommitTime is at or before the commit time of every transaction that
	// ends after LSN: the commit time of the newest transaction at or
	// before LSN (pgoutput's Begin gives it), or an earlier time. Zero
	// means unknown: the time stored with an earlier position stands (see
	// [Store.SaveAt]).
	//
	// PostgreSQL takes a commit's time just before it writes the commit
	// record, so two transactions committing at once may have their times
	// in the other order than their records, by far less than a second:
	// recover's margin covers that.
	CommitTime time.Time
}

// HeldTo returns p held at or below bound: p when bound is not before it,
// else bound's LSN with the earlier of the two times (zero, unknown, if
// either is). p's own time says nothing of the transactions between bound
// and p, which a lowered position must be recovered from too; bound's time
// is what covers them, and every transaction after bound. The earlier of
// the two is as safe, and never later than the tracker's.
func (p Position) HeldTo(bound Position) Position {
	if bound.LSN >= p.LSN {
		return p
	}
	at := bound.CommitTime
	switch {
	case p.CommitTime.IsZero():
		at = time.Time{}
	case p.CommitTime.Before(at):
		at = p.CommitTime
	}
	return Position{LSN: bound.LSN, CommitTime: at}
}
