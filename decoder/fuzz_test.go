package decoder

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"
)

// FuzzDecode feeds the decoder a Relation message and then any message.
// Decode must never panic, and every error it returns must be ErrMalformed
// or a MappingError. Where pglogrepl.Parse also accepts a message (Begin,
// Commit, Relation, Insert, Message), the decoder must agree with it: the
// commit LSN of a Begin, the end LSN of a Commit, the columns a Relation
// maps, an Insert's key, value, id, headers and topic, read from
// pglogrepl's tuple by the column names of pglogrepl's Relation, and a
// Message's record, read from pglogrepl's content with encoding/json. Any
// input is also JSON to validJSON exactly when it is to json.Valid.
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
		logicalMsg(true, 0x16B3748, "outbox", `{"topic": "orders", "key": "o-1", "id": "e-1", "headers": {"trace": "abc"}, "payload": {"total": 5}}`),
		logicalMsg(true, 0x16B3748, "outbox", `{"key": 42, "id": null, "payload": "text \u00e9\n"}`),
		logicalMsg(true, 0x16B3748, "outbox", `{"payload": 1, "payload": 2, "x": [1, {"y": "]}"}]}`),
		logicalMsg(true, 0x16B3748, "outbox", `{"topic": "_schemas", "key": {}, "headers": [], "payload": null}`),
		logicalMsg(true, 0x16B3748, "outbox", `[1, 2]`),
		logicalMsg(false, 0x16B3748, "outbox", `{"payload": 1}`),
		logicalMsg(true, 0x16B3748, "other", `{"payload": 1}`),
		logicalMsg(true, 0x16B3748, "po", `{"k": "o-1", "id": 7, "rest": true}`),
		logicalMsg(true, 0x16B3748, "po", `{"k": [1]}`),
		logicalMsg(true, 0x16B3748, "po", "\xff"),
	} {
		f.Add(outbox, msg)
	}
	f.Add(relationMsg(16400, "public", "outbox", outboxCols[:3]), insertMsg(16400, s("a"), s("b"), s("c")))
	// JSON texts, for the check of validJSON against json.Valid.
	for _, j := range []string{`{"a": [1, -2.5e+3, "\u00e9\n", true, false, null, {}]}`, `[0.5E-1, "\ud800", {"b": {"c": []}}]`, ` "x" `, `-0`, `01`, `1.`, `{"a" 1}`, "\"\x01\""} {
		f.Add([]byte(j), beginMsg(0x1000))
	}
	f.Fuzz(func(t *testing.T, rel, msg []byte) {
		for _, b := range [][]byte{rel, msg} {
			if validJSON(b) != json.Valid(b) {
				t.Fatalf("validJSON(%q) = %v, json.Valid says %v", b, validJSON(b), json.Valid(b))
			}
		}
		d, err := NewSources([]Mapping{DefaultMapping()}, fuzzMessages)
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

		// A Message is also decoded with its content length made right,
		// so that the fuzzer explores contents, not only lengths.
		if fixed := withContentLength(msg); fixed != nil {
			m, err := d.Decode(fixed)
			checkError(t, err)
			if pg, ok := parse(fixed).(*pglogrepl.LogicalDecodingMessage); ok && err == nil {
				agreeMessage(t, d, pg, m)
			}
		}

		m, err := d.Decode(msg)
		checkError(t, err)
		if err != nil || len(msg) == 0 {
			return
		}
		switch msg[0] {
		case 'B', 'C', 'R', 'M':
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
			if m.Kind != KindBegin || d.commitLSN != uint64(pg.FinalLSN) || m.Xid != pg.Xid {
				t.Fatalf("Begin: kind %v commit LSN %x xid %d; pglogrepl: final LSN %s xid %d", m.Kind, d.commitLSN, m.Xid, pg.FinalLSN, pg.Xid)
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
		case *pglogrepl.LogicalDecodingMessage:
			agreeMessage(t, d, pg, m)
		}
	})
}

// withContentLength returns a copy of the Message msg with its content
// length set to the bytes that follow it, or nil when msg is no Message
// with a prefix and a length.
func withContentLength(msg []byte) []byte {
	if len(msg) < 10 || msg[0] != 'M' {
		return nil
	}
	end := bytes.IndexByte(msg[10:], 0)
	if end < 0 || len(msg) < 10+end+1+4 {
		return nil
	}
	fixed := bytes.Clone(msg)
	at := 10 + end + 1
	binary.BigEndian.PutUint32(fixed[at:], uint32(len(fixed)-at-4))
	return fixed
}

// fuzzMessages are FuzzDecode's message mappings: envelopes of prefix
// "outbox", and payload-only messages of prefix "po" keyed by their member
// "k" with their member "id" as id.
var fuzzMessages = []MessageMapping{
	{Prefix: "outbox", Topic: "fallback"},
	{Prefix: "po", Topic: "t", PayloadOnly: true, KeyField: "k", IDField: "id"},
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

// agreeMessage checks the Message decoded from a logical decoding message
// against pglogrepl's reading of it, the content read with encoding/json:
// an event exactly for a transactional message of a mapped prefix (a
// non-transactional one of a mapped prefix reported with it); its
// id, first as a header; a poison one's value is the content; otherwise
// the record the envelope or the payload-only mapping says.
func agreeMessage(t *testing.T, d *Decoder, pg *pglogrepl.LogicalDecodingMessage, m Message) {
	t.Helper()
	src := d.source([]byte(pg.Prefix))
	if !pg.Transactional {
		want, prefix := KindIgnored, ""
		if src != nil {
			want, prefix = KindNonTransactionalMessage, pg.Prefix
		}
		if m.Kind != want || m.Prefix != prefix {
			t.Fatalf("non-transactional message of prefix %q decoded as %v, prefix %q", pg.Prefix, m.Kind, m.Prefix)
		}
		return
	}
	if src == nil {
		if m.Kind != KindUnmappedMessage || m.Prefix != pg.Prefix {
			t.Fatalf("message of unmapped prefix %q decoded as %v, prefix %q", pg.Prefix, m.Kind, m.Prefix)
		}
		return
	}
	ev := m.Event
	if m.Kind != KindEvent || ev.Table != src.index {
		t.Fatalf("message of prefix %q: kind %v table %d", pg.Prefix, m.Kind, ev.Table)
	}
	if len(ev.Headers) == 0 || ev.Headers[0].Key != "id" || !bytes.Equal(ev.Headers[0].Value, ev.ID) || ev.ID == nil {
		t.Fatalf("id %q, headers %v: the id is not the first header", ev.ID, ev.Headers)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(pg.Content, &members); err != nil && m.Poison == nil && !(src.m.PayloadOnly && src.m.KeyField == "" && src.m.IDField == "") {
		t.Fatalf("content %q is not a JSON object (%v), but the message is not poison", pg.Content, err)
	}
	wantText := func(what string, raw json.RawMessage, got []byte, none []byte) {
		t.Helper()
		want := none
		switch {
		case raw == nil || string(raw) == "null":
		case raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			want = []byte(s)
		default:
			want = raw
		}
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("%s %q, encoding/json reads %q (%s) in %q", what, got, want, raw, pg.Content)
		}
	}
	if m.Poison != nil {
		// Content that could not be read is parked whole; an envelope
		// read but refused (its topic, its headers) keeps its payload.
		if src.m.PayloadOnly || strings.Contains(m.Poison.Error(), "the parked value is the message's whole content") {
			if !bytes.Equal(ev.Value, pg.Content) {
				t.Fatalf("poison (%v) value %q, want the content %q", m.Poison, ev.Value, pg.Content)
			}
			return
		}
		if members == nil {
			t.Fatalf("poison (%v) with a payload as its value, but %q is no JSON object to read", m.Poison, pg.Content)
		}
		wantText("poison's value", members["payload"], ev.Value, nil)
		return
	}
	lsn := []byte(pg.LSN.String())
	if src.m.PayloadOnly {
		if !bytes.Equal(ev.Value, pg.Content) || ev.Topic != src.m.Topic {
			t.Fatalf("payload-only: value %q topic %q, want the content %q and %q", ev.Value, ev.Topic, pg.Content, src.m.Topic)
		}
		wantText("key", members[src.m.KeyField], ev.Key, nil)
		wantText("id", members[src.m.IDField], ev.ID, lsn)
		return
	}
	for name := range members {
		switch name {
		case "topic", "key", "id", "headers", "payload":
		default:
			t.Fatalf("member %q in %q, but the message is not poison", name, pg.Content)
		}
	}
	payload, ok := members["payload"]
	if !ok {
		t.Fatalf("no payload in %q, but the message is not poison", pg.Content)
	}
	wantText("value", payload, ev.Value, nil)
	wantText("key", members["key"], ev.Key, nil)
	wantText("id", members["id"], ev.ID, lsn)
	wantText("topic", members["topic"], []byte(ev.Topic), []byte(src.m.Topic))
}
