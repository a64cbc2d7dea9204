package decoder

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"
)

// FuzzDecode feeds the decoder a Relation message and then any message.
// Decode must never panic, and every error it returns must be ErrMalformed
// or a MappingError. Where pglogrepl.Parse also accepts a message (Begin,
// Commit, Relation, Insert), the decoder must agree with it: the commit
// LSN of a Begin, the end LSN of a Commit, the columns a Relation maps,
// and an Insert's key, value, id, headers and topic, read from pglogrepl's
// tuple by the column names of pglogrepl's Relation.
//
// make fuzz runs it for 30 s; the seeds are below and in
// testdata/fuzz/FuzzDecode (messages PostgreSQL 15 sent, and every input
// that once failed).
func FuzzDecode(f *testing.F) {
	outbox := relationMsg(16400, "public", "outbox", outboxCols)
	ts := s("2026-11-22 16:59:15.123456+00")
	for _, msg := range [][]byte{
		beginMsg(0x1000),
		commitMsg(0x1000, 0x1038),
		insertMsg(16400, s("0b7e-id"), s("order"), s("o-1"), s("OrderPlaced"), nil, s(`{"total": 5}`), nil, ts),
		insertMsg(16400, s("id2"), s("order"), s("o-2"), s("OrderPaid"), s("payments"), s(`{}`), s(`{"trace": "abc", "n": 3}`), ts),
		insertMsg(16400, s("id3"), s("bad topic!*"), s("o-3"), s("X"), nil, s(`{}`), nil, nil),
		insertMsg(16400, s("id4"), s("order"), s("o-4"), s("X"), s("_schemas"), s(`{}`), s(`[1]`), nil),
		insertMsg(16400, nil, nil, nil, nil, nil, nil, nil, nil),
		insertMsg(16400, s("short")),
		insertMsg(16401, s("7")),
		relationMsg(16401, "public", "orders", []col{{"id", 23}}),
		{'U', 0, 0, 0x40, 0x10, 'N', 0, 0},
		{'D', 0, 0, 0x40, 0x10, 'K', 0, 0},
		{'T', 0, 0, 0, 1, 0, 0, 0, 0x40, 0x10},
	} {
		f.Add(outbox, msg)
	}
	f.Add(relationMsg(16400, "public", "outbox", outboxCols[:3]), insertMsg(16400, s("a"), s("b"), s("c")))
	f.Fuzz(func(t *testing.T, rel, msg []byte) {
		d, err := New(DefaultMapping())
		if err != nil {
			t.Fatal(err)
		}
		_, relErr := d.Decode(rel)
		checkError(t, relErr)
		var pgRel *pglogrepl.RelationMessage
		if relErr == nil && len(rel) > 0 && rel[0] == 'R' {
			if r, ok := parse(rel).(*pglogrepl.RelationMessage); ok {
				pgRel = r
				agreeRelation(t, d, r)
			}
		}

		m, err := d.Decode(msg)
		checkError(t, err)
		if err != nil || len(msg) == 0 {
			return
		}
		switch msg[0] {
		case 'B', 'C', 'R':
		case 'I':
			// Only where the decoder read the whole tuple: pglogrepl
			// allocates each column's claimed length before it checks it.
			if pgRel == nil || m.Kind != KindEvent {
				return
			}
		default:
			return
		}
		switch pg := parse(msg).(type) {
		case *pglogrepl.BeginMessage:
			if m.Kind != KindBegin || d.commitLSN != uint64(pg.FinalLSN) {
				t.Fatalf("Begin: kind %v commit LSN %x; pglogrepl: final LSN %s", m.Kind, d.commitLSN, pg.FinalLSN)
			}
		case *pglogrepl.CommitMessage:
			if m.Kind != KindCommit || m.EndLSN != uint64(pg.TransactionEndLSN) {
				t.Fatalf("Commit: kind %v end LSN %x; pglogrepl: end LSN %s", m.Kind, m.EndLSN, pg.TransactionEndLSN)
			}
		case *pglogrepl.RelationMessage:
			mapped := d.table(pg.Namespace, pg.RelationName) != nil && pg.RelationID != 0
			if want := map[bool]Kind{true: KindRelation, false: KindIgnored}[mapped]; m.Kind != want {
				t.Fatalf("Relation of %s.%s decoded as %v, want %v", pg.Namespace, pg.RelationName, m.Kind, want)
			}
			agreeRelation(t, d, pg)
		case *pglogrepl.InsertMessage:
			// The rows of a relation that does not fit the mapping are
			// parked as they are: nothing to agree on.
			if pg.RelationID == pgRel.RelationID && d.relations[pg.RelationID].poison == nil {
				agreeInsert(t, pgRel, pg, m)
			}
		}
	})
}

// parse is pglogrepl.Parse, or nil where it fails or panics (it indexes
// past the end of some truncated messages).
func parse(data []byte) (m pglogrepl.Message) {
	defer func() {
		if recover() != nil {
			m = nil
		}
	}()
	m, err := pglogrepl.Parse(data)
	if err != nil {
		return nil
	}
	return m
}

func checkError(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrMalformed) && !errors.As(err, new(*MappingError)) {
		t.Fatalf("error %v is neither ErrMalformed nor a MappingError", err)
	}
}

// agreeRelation checks the decoder's cache of a Relation against
// pglogrepl's reading of it: the column count, whether it is the mapped
// table, and the name of the column each role resolved to.
func agreeRelation(t *testing.T, d *Decoder, pg *pglogrepl.RelationMessage) {
	t.Helper()
	rel := d.relations[pg.RelationID]
	if rel == nil {
		t.Fatalf("relation %d (%s.%s) not cached", pg.RelationID, pg.Namespace, pg.RelationName)
	}
	if rel.ncols != len(pg.Columns) {
		t.Fatalf("relation %d: %d columns, pglogrepl %d", pg.RelationID, rel.ncols, len(pg.Columns))
	}
	tbl := d.table(pg.Namespace, pg.RelationName)
	if rel.t != tbl {
		t.Fatalf("relation %s.%s: mapped to %v, want %v", pg.Namespace, pg.RelationName, rel.t, tbl)
	}
	if tbl == nil {
		return
	}
	m := tbl.m
	roles := map[string]int{m.IDColumn: rel.id, m.KeyColumn: rel.key, m.PayloadColumn: rel.payload,
		m.TopicColumn: rel.topic, m.HeadersColumn: rel.headers, m.TimestampColumn: rel.ts}
	for i, h := range rel.headerNames {
		roles[h] = rel.headerCols[i]
	}
	for name, i := range roles {
		want := columnIndex(pg, name)
		if name == m.TimestampColumn && want >= 0 {
			switch pg.Columns[want].DataType {
			case oidTimestamptz, oidTimestamp, oidInt8:
			default:
				want = -1 // a type the mapping cannot use: not read
			}
		}
		if i != want {
			t.Fatalf("column %q resolved to %d, pglogrepl has it at %d", name, i, want)
		}
	}
}

// columnIndex is the index of the first column called name, or -1.
func columnIndex(pg *pglogrepl.RelationMessage, name string) int {
	for i, c := range pg.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// agreeInsert checks an event against pglogrepl's tuple, read by the
// column names of rel, for the default mapping.
func agreeInsert(t *testing.T, rel *pglogrepl.RelationMessage, pg *pglogrepl.InsertMessage, m Message) {
	t.Helper()
	// value returns the named column's bytes, or nil for NULL, an
	// unchanged TOAST value or a missing column.
	value := func(name string) []byte {
		i := columnIndex(rel, name)
		if i < 0 || i >= len(pg.Tuple.Columns) {
			return nil
		}
		c := pg.Tuple.Columns[i]
		if c.DataType != pglogrepl.TupleDataTypeText && c.DataType != pglogrepl.TupleDataTypeBinary {
			return nil
		}
		if c.Data == nil {
			return []byte{}
		}
		return c.Data
	}
	same := func(field string, got, want []byte) {
		t.Helper()
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("%s %q, pglogrepl %q", field, got, want)
		}
	}
	ev := m.Event
	same("key", ev.Key, value("aggregate_id"))
	same("value", ev.Value, value("payload"))
	same("id", ev.ID, value("id"))
	var want []Header
	if id := value("id"); id != nil {
		want = append(want, Header{"id", id})
	}
	for _, h := range DefaultMapping().HeaderColumns {
		want = append(want, Header{h, value(h)})
	}
	if len(ev.Headers) < len(want) {
		t.Fatalf("%d headers, want at least %d", len(ev.Headers), len(want))
	}
	for i, h := range want {
		if ev.Headers[i].Key != h.Key {
			t.Fatalf("header %d is %q, want %q", i, ev.Headers[i].Key, h.Key)
		}
		same("header "+h.Key, ev.Headers[i].Value, h.Value)
	}
	topic := value("topic")
	if topic == nil {
		if agg := value("aggregate_type"); agg != nil {
			topic = append([]byte("outbox.event."), agg...)
		}
	}
	switch {
	case topic == nil:
		if m.Poison == nil {
			t.Fatalf("no topic column and a NULL template input, but no poison (topic %q)", ev.Topic)
		}
	case ev.Topic != string(topic):
		t.Fatalf("topic %q, pglogrepl's columns give %q", ev.Topic, topic)
	case ValidTopic(ev.Topic) != nil || strings.HasPrefix(ev.Topic, "_") || strings.HasPrefix(ev.Topic, "connect-"):
		if m.Poison == nil {
			t.Fatalf("topic %q is illegal or not allowed, but the event is not poison", ev.Topic)
		}
	}
}
