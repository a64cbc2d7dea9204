package decoder

import (
	"bytes"
	"encoding/binary"
	"time"
)

// Decode decodes one pgoutput message (the WAL data of one XLogData). data
// is only read during the call. A returned error is fatal for the stream: a
// malformed message. Rows that cannot be relayed are reported in
// Message.Poison instead, and a mapped table whose columns do not fit the
// mapping in Message.Relation.Unfit.
func (d *Decoder) Decode(data []byte) (Message, error) {
	if len(data) == 0 {
		return Message{}, malformed("empty message")
	}
	switch data[0] {
	case 'B':
		// Begin: final (commit) LSN, commit timestamp, xid.
		if len(data) < 21 {
			return Message{}, malformed("short Begin (%d bytes)", len(data))
		}
		d.commitLSN = binary.BigEndian.Uint64(data[1:9])
		d.commitTime = pgTime(int64(binary.BigEndian.Uint64(data[9:17])))
		return Message{Kind: KindBegin, CommitLSN: d.commitLSN, CommitTime: d.commitTime, Xid: binary.BigEndian.Uint32(data[17:21])}, nil
	case 'C':
		// Commit: flags, commit LSN, end LSN, commit timestamp.
		if len(data) < 26 {
			return Message{}, malformed("short Commit (%d bytes)", len(data))
		}
		return Message{Kind: KindCommit, EndLSN: binary.BigEndian.Uint64(data[10:18])}, nil
	case 'R':
		if err := d.relation(data[1:]); err != nil || d.rel.OID == 0 {
			return Message{}, err
		}
		return Message{Kind: KindRelation, Relation: d.rel}, nil
	case 'I':
		return d.insert(data[1:])
	case 'M':
		return d.logicalMessage(data[1:])
	default:
		return Message{}, nil
	}
}

// cstring reads a NUL-terminated string.
func cstring(b []byte) (string, []byte, error) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", nil, malformed("unterminated string")
	}
	return string(b[:i]), b[i+1:], nil
}

func (d *Decoder) relation(b []byte) error {
	if len(b) < 4 {
		return malformed("short Relation")
	}
	relID := binary.BigEndian.Uint32(b)
	nsp, b, err := cstring(b[4:])
	if err != nil {
		return err
	}
	name, b, err := cstring(b)
	if err != nil {
		return err
	}
	if len(b) < 3 {
		return malformed("short Relation %s.%s", nsp, name)
	}
	ncols := int(binary.BigEndian.Uint16(b[1:3]))
	b = b[3:]
	names := make([]string, ncols)
	types := make([]uint32, ncols)
	for i := 0; i < ncols; i++ {
		if len(b) < 1 {
			return malformed("short Relation column")
		}
		names[i], b, err = cstring(b[1:])
		if err != nil {
			return err
		}
		if len(b) < 8 {
			return malformed("short Relation column %q", names[i])
		}
		types[i] = binary.BigEndian.Uint32(b)
		b = b[8:]
	}
	rel := &relation{ncols: ncols}
	d.rel = Relation{}
	if t := d.table(nsp, name); t != nil {
		d.rel.OID, d.rel.Table = relID, t.index
		if me := resolve(t, rel, names, types); me != nil {
			me.Table = nsp + "." + name
			d.rel.Unfit = me
			rel.poison, rel.noTopic = poisonOf(me), me.Missing != "" && !me.Timestamp
		}
	}
	d.relations[relID] = rel
	return nil
}

// table returns the mapping of table schema.name, or nil.
func (d *Decoder) table(schema, name string) *table {
	for _, t := range d.tables {
		if t.m.Schema == schema && t.m.Table == name {
			return t
		}
	}
	return nil
}

// insert decodes an Insert: relation id, 'N', then the new tuple.
func (d *Decoder) insert(b []byte) (Message, error) {
	if len(b) < 7 || b[4] != 'N' {
		return Message{}, malformed("short Insert")
	}
	relID := binary.BigEndian.Uint32(b)
	rel, ok := d.relations[relID]
	if !ok {
		return Message{}, malformed("Insert for relation %d before its Relation message", relID)
	}
	if rel.t == nil {
		return Message{}, nil
	}
	ncols := int(binary.BigEndian.Uint16(b[5:7]))
	if ncols > len(b)-7 { // each column takes a byte at least
		return Message{}, malformed("Insert of %d columns in %d bytes", ncols, len(b))
	}
	r := row{msg: b}
	if cap(d.spans) < ncols {
		d.spans = make([]span, ncols)
	}
	r.spans = d.spans[:ncols]
	// First where each column is in the message (offsets: no pointers, so
	// nothing outlives the call and writing them costs no write barrier).
	off := 7
	for i := range r.spans {
		if len(b)-off < 1 {
			return Message{}, malformed("short tuple")
		}
		switch b[off] {
		case 'n', 'u':
			r.spans[i] = span{n: -1}
			off++
		case 't', 'b':
			if len(b)-off < 5 {
				return Message{}, malformed("short tuple column")
			}
			n := int(binary.BigEndian.Uint32(b[off+1:]))
			off += 5
			if n < 0 || len(b)-off < n {
				return Message{}, malformed("tuple column of %d bytes overruns message", n)
			}
			r.spans[i] = span{off: off, n: n}
			off += n
		default:
			return Message{}, malformed("tuple column kind %q", b[off])
		}
	}
	// Then the columns the event keeps are copied into one buffer of
	// exactly their size: an event never holds the rest of the row (an
	// unmapped column of megabytes), and Event.Size covers what it holds.
	n := 0
	for _, i := range rel.kept {
		if i < ncols && r.spans[i].n > 0 {
			n += r.spans[i].n
		}
	}
	r.own = make([]byte, n)
	n = 0
	for _, i := range rel.kept {
		if i >= ncols || r.spans[i].n < 0 {
			continue
		}
		sp := &r.spans[i]
		copy(r.own[n:], b[sp.off:sp.off+sp.n])
		*sp = span{off: n, n: sp.n, own: true}
		n += sp.n
	}
	return d.event(rel, &r), nil
}

// span is where a tuple column's bytes are: in the message, or in the
// event's own buffer (own) once kept. n < 0 is NULL.
type span struct {
	off, n int
	own    bool
}

// row is one decoded tuple: the message (valid during Decode only), the
// event's own copy of the kept columns, and each column's span.
type row struct {
	msg, own []byte
	spans    []span
}

// column is one decoded tuple column: null, or its text bytes.
type column struct {
	null bool
	data []byte
}

// col returns column i, or a null column when the relation lacks it. Its
// data is the event's own for a kept column, else valid during Decode only.
func (r *row) col(i int) column {
	if i < 0 || i >= len(r.spans) {
		return column{null: true}
	}
	sp := r.spans[i]
	switch {
	case sp.n < 0:
		return column{null: true}
	case sp.own:
		return column{data: r.own[sp.off : sp.off+sp.n : sp.off+sp.n]}
	default:
		return column{data: r.msg[sp.off : sp.off+sp.n : sp.off+sp.n]}
	}
}

// pgTime converts a pgoutput timestamp, microseconds since 2000-01-01 UTC,
// to a time.
func pgTime(micros int64) time.Time {
	const unixTo2000 = 946684800 // seconds from the Unix epoch to 2000-01-01
	return time.UnixMicro(micros + unixTo2000*1e6)
}
