package decoder

import (
	"fmt"
	"math"
	"strconv"
)

// event makes the Message of an insert on a mapped table from its row: the
// record's parts, its topic or routes, and the reason it is poison if it
// is.
func (d *Decoder) event(rel *relation, r *row) Message {
	t := rel.t
	msg := Message{Kind: KindEvent}
	ev := &msg.Event
	ev.CommitLSN = d.commitLSN
	ev.Table = t.index
	ev.Key = r.col(rel.key).data
	ev.Value = r.col(rel.payload).data
	var bytesErr error // a bytea column that is not hex: parked, with the rest decoded
	if rel.keyBytes {
		ev.Key, bytesErr = unhex(ev.Key, t.m.KeyColumn)
	}
	if rel.payloadBytes && bytesErr == nil {
		ev.Value, bytesErr = unhex(ev.Value, t.m.PayloadColumn)
	}
	msg.Poison = bytesErr
	if rel.shapes && bytesErr == nil {
		msg.Poison = rel.shape(ev, r)
	}

	nh := len(rel.headerCols)
	id := r.col(rel.id)
	if !id.null {
		ev.ID = id.data
		nh++
	}
	ev.Headers = d.headers[:0]
	if cap(ev.Headers) < nh {
		ev.Headers = make([]Header, 0, nh+4)
	}
	defer func() { d.headers = ev.Headers[:0] }()
	if !id.null {
		ev.Headers = append(ev.Headers, Header{Key: "id", Value: id.data})
	}
	for i, c := range rel.headerCols {
		ev.Headers = append(ev.Headers, Header{Key: rel.headerNames[i], Value: r.col(c).data})
	}
	if rel.convertsHeaders {
		rel.convertHeaders(ev.Headers, r, !id.null)
	}
	if h := r.col(rel.headers); !h.null {
		var err error
		// The relay's own headers (id, the header columns) win over a key
		// of the same name in the headers column: the record carries each
		// name once.
		if ev.Headers, err = appendJSONHeaders(ev.Headers, len(ev.Headers), h.data); err != nil {
			msg.Poison = fmt.Errorf("headers column %q: %w", t.m.HeadersColumn, err)
		}
	}
	if rel.trace >= 0 {
		if c := r.col(rel.trace); !c.null {
			var n int
			ev.Headers, n = appendTraceHeaders(ev.Headers, c.data)
			if rel.convertsHeaders {
				rel.convertTraceHeaders(ev.Headers[:n])
			}
		}
	}
	if rel.partition >= 0 {
		if err := placeEvent(ev, r.col(rel.partition), t.m.PartitionColumn); err != nil && msg.Poison == nil {
			msg.Poison = err
		}
	}
	if ts := r.col(rel.ts); !ts.null {
		ev.Timestamp = parseTimestamp(ts.data, rel.tsType, t.m.TimestampUnit, t.loc)
	}

	if rel.poison != nil {
		msg.Poison = rel.poison
		if rel.noTopic {
			return msg
		}
	}
	var err error
	if len(t.routes) > 0 {
		msg.Routed = true
		msg.Routes, err = d.route(t, r.col(rel.tags), rel.tagsType)
	} else if c := r.col(rel.topic); !c.null {
		ev.Topic, err = t.topics.get(c.data)
	} else {
		ev.Topic, err = d.render(rel, r)
	}
	if err != nil && msg.Poison == nil {
		msg.Poison = err
	}
	return msg
}

// render builds the topic from the template.
func (d *Decoder) render(rel *relation, r *row) (string, error) {
	buf := d.scratch[:0]
	for p, part := range rel.template {
		if part.column == "" {
			buf = append(buf, part.literal...)
			continue
		}
		c := r.col(rel.templateCols[p])
		if c.null {
			return "", fmt.Errorf("topic template input column %q is NULL", part.column)
		}
		buf = append(buf, c.data...)
	}
	d.scratch = buf
	return rel.t.topics.get(buf)
}

// placeEvent places ev on the partition c, the partition column col,
// names (Event.Placed); a NULL leaves it to the key's hash. A value that
// names no partition (negative, or beyond 32 bits) is the reason the
// event is parked, placed on partition -1: its record is refused on every
// attempt, never sent by its key's hash, until the row is corrected and
// reset.
func placeEvent(ev *Event, c column, col string) error {
	if c.null {
		return nil
	}
	ev.Placed = true
	p, err := strconv.ParseInt(string(c.data), 10, 64)
	if err != nil || p < 0 || p > math.MaxInt32 {
		ev.Partition = -1
		return fmt.Errorf("partition column %q holds %s, which names no partition (a partition is a number from 0 to the topic's partitions less one): "+
			"correct the row and reset it to send the event again, or skip it (cdc-relay failed skip)", col, c.data)
	}
	ev.Partition = int32(p)
	return nil
}
