package replication

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pglogrepl"
)

// TimelineSwitch is one line of a timeline's history: timeline Parent
// ended at At, where its child began. WAL before At is the same on both;
// from At on, the child's WAL is its own, at positions the parent may have
// used for other transactions.
type TimelineSwitch struct {
	Parent int32
	At     pglogrepl.LSN
}

// TimelineHistory returns the history of timeline tli (TIMELINE_HISTORY):
// a line for each of its ancestors, oldest first. Timeline 1 has none, and
// the server has no history file for it: it returns none without asking.
func (c *Conn) TimelineHistory(ctx context.Context, tli int32) ([]TimelineSwitch, error) {
	if tli <= 1 {
		return nil, nil
	}
	res, err := pglogrepl.TimelineHistory(ctx, c.pg, tli)
	if err != nil {
		return nil, fmt.Errorf("read the history of timeline %d (TIMELINE_HISTORY): %w", tli, err)
	}
	h, err := ParseTimelineHistory(res.Content)
	if err != nil {
		return nil, fmt.Errorf("read the history of timeline %d (%s): %w", tli, res.FileName, err)
	}
	return h, nil
}

// ParseTimelineHistory parses a timeline history file: a line per
// ancestor, "parentTLI<TAB>switchpoint<TAB>reason"; blank lines and lines
// starting with '#' are comments, as PostgreSQL reads them.
func ParseTimelineHistory(content []byte) ([]TimelineSwitch, error) {
	var h []TimelineSwitch
	for n, line := range bytes.Split(content, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		f := bytes.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: %q: want a timeline and a switch point", n+1, line)
		}
		tli, err := strconv.ParseUint(string(f[0]), 10, 31)
		if err != nil {
			return nil, fmt.Errorf("line %d: timeline %q: %w", n+1, f[0], err)
		}
		at, err := pglogrepl.ParseLSN(string(f[1]))
		if err != nil {
			return nil, fmt.Errorf("line %d: switch point %q: %w", n+1, f[1], err)
		}
		h = append(h, TimelineSwitch{Parent: int32(tli), At: at})
	}
	return h, nil
}

// SwitchPoint returns where timeline tli ended in history h, and false
// when tli is not one of its ancestors.
func SwitchPoint(h []TimelineSwitch, tli int32) (pglogrepl.LSN, bool) {
	for _, s := range h {
		if s.Parent == tli {
			return s.At, true
		}
	}
	return 0, false
}
