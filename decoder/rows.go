package decoder

import "fmt"

// Rows decodes outbox rows read with SQL rather than from the WAL, with
// the same mapping the stream applies: `cdc-relay recover` publishes again
// the rows of a stretch of WAL the relay never read. Create it with
// [Decoder.Rows].
type Rows struct {
	d   *Decoder
	rel *relation
}

// Rows returns a decoder for rows of the first mapped table that carry these
// columns, in this order, with these type OIDs (a query's field
// descriptions). It returns a [*MappingError] when the columns do not fit
// the mapping, as a Relation message would.
func (d *Decoder) Rows(names []string, types []uint32) (*Rows, error) {
	if len(d.tables) == 0 {
		return nil, fmt.Errorf("mapping: no outbox table: the decoder relays messages only")
	}
	t := d.tables[0]
	rel := &relation{ncols: len(names)}
	if me := resolve(t, rel, names, types); me != nil {
		me.Table = t.m.Schema + "." + t.m.Table
		return nil, me
	}
	return &Rows{d: d, rel: rel}, nil
}

// Decode returns the event for one row: values[i] is column i in the text
// format PostgreSQL sends with TimeZone=UTC, DateStyle=ISO and
// bytea_output=hex, nil for NULL. commitLSN becomes Event.CommitLSN. The
// event's byte slices are copies; its Headers slice is reused by the next
// Decode, as with [Decoder.Decode].
func (r *Rows) Decode(values [][]byte, commitLSN uint64) Message {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	row := row{own: make([]byte, 0, n), spans: make([]span, len(values))}
	for i, v := range values {
		if v == nil {
			row.spans[i] = span{n: -1}
			continue
		}
		row.spans[i] = span{off: len(row.own), n: len(v), own: true}
		row.own = append(row.own, v...)
	}
	r.d.commitLSN = commitLSN
	return r.d.event(r.rel, &row)
}
