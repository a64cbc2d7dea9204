package relay

import (
	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// gate is the tracker as the stream sees it: the checkpoint tracker, with
// its safe position held at or below every bound. A bound is a position
// something else must vouch for before PostgreSQL may forget the WAL up to
// it: the checkpoint row saved ahead of confirmation, for one.
type gate struct {
	*checkpoint.Tracker
	bounds []func() pglogrepl.LSN
}

// Safe returns the tracker's safe position, lowered to the lowest bound.
func (g gate) Safe() pglogrepl.LSN {
	safe := g.Tracker.Safe()
	for _, b := range g.bounds {
		safe = min(safe, b())
	}
	return safe
}
