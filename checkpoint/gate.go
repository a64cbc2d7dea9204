package checkpoint

import (
	"github.com/jackc/pglogrepl"
)

// Gate is the tracker as the stream sees it: the checkpoint tracker, with
// its safe position held at or below every bound. A bound is a position
// something else must vouch for before PostgreSQL may forget the WAL up to
// it: the checkpoint row saved ahead of confirmation, for one.
//
// A bound also says when it was reached: its CommitTime is at or before
// the commit of every transaction after it (the table watch reads the
// server's clock before the WAL position). A position the gate lowers to a
// bound takes the earlier of that time and the tracker's
// ([Position.HeldTo]): the tracker's time is that of a
// transaction at or before its own position, and the transactions between
// the bound and that position may have committed before it, so only the
// bound's time covers them.
type Gate struct {
	*Tracker
	// Bounds are the positions something else must vouch for first, each
	// read when the gate is asked.
	Bounds []func() Position
}

// Safe returns the tracker's safe position, lowered to the lowest bound.
func (g Gate) Safe() pglogrepl.LSN {
	safe := g.Tracker.Safe()
	for _, b := range g.Bounds {
		safe = min(safe, b().LSN)
	}
	return safe
}

// SafePosition returns Safe with a commit time at or before the commit of
// every transaction after it, for the checkpoint row (see the type's
// comment); zero when the tracker or a bound that lowers it has none.
func (g Gate) SafePosition() Position {
	pos := g.Tracker.SafePosition()
	for _, b := range g.Bounds {
		pos = pos.HeldTo(b())
	}
	return pos
}
