package decoder

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Builders for pgoutput (protocol 1) messages, as PostgreSQL writes them.

type col struct {
	name string
	oid  uint32
}

var outboxCols = []col{
	{"id", 2950}, {"aggregate_type", 25}, {"aggregate_id", 25}, {"event_type", 25},
	{"topic", 25}, {"payload", 3802}, {"headers", 3802}, {"created_at", oidTimestamptz},
}

func relationMsg(id uint32, nsp, name string, cols []col) []byte {
	b := []byte{'R'}
	b = binary.BigEndian.AppendUint32(b, id)
	b = append(append(b, nsp...), 0)
	b = append(append(b, name...), 0)
	b = append(b, 'd')
	b = binary.BigEndian.AppendUint16(b, uint16(len(cols)))
	for _, c := range cols {
		b = append(b, 0)
		b = append(append(b, c.name...), 0)
		b = binary.BigEndian.AppendUint32(b, c.oid)
		b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
	}
	return b
}

// insertMsg builds an Insert; a nil value is NULL.
func insertMsg(rel uint32, vals ...*string) []byte {
	b := []byte{'I'}
	b = binary.BigEndian.AppendUint32(b, rel)
	b = append(b, 'N')
	b = binary.BigEndian.AppendUint16(b, uint16(len(vals)))
	for _, v := range vals {
		if v == nil {
			b = append(b, 'n')
			continue
		}
		b = append(b, 't')
		b = binary.BigEndian.AppendUint32(b, uint32(len(*v)))
		b = append(b, *v...)
	}
	return b
}

func s(v string) *string { return &v }

func beginMsg(final uint64) []byte {
	b := []byte{'B'}
	b = binary.BigEndian.AppendUint64(b, final)
	b = binary.BigEndian.AppendUint64(b, 0)
	return binary.BigEndian.AppendUint32(b, 42)
}

func commitMsg(commit, end uint64) []byte {
	b := []byte{'C', 0}
	b = binary.BigEndian.AppendUint64(b, commit)
	b = binary.BigEndian.AppendUint64(b, end)
	return binary.BigEndian.AppendUint64(b, 0)
}

func mustDecode(t *testing.T, d *Decoder, msg []byte) Message {
	t.Helper()
	m, err := d.Decode(msg)
	if err != nil {
		t.Fatalf("decode %q: %v", msg[:1], err)
	}
	return m
}

func headerMap(hs []Header) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		if h.Value == nil {
			m[h.Key] = "<nil>"
		} else {
			m[h.Key] = string(h.Value)
		}
	}
	return m
}

func TestDecodeOutboxInsert(t *testing.T) {
	ts := "2026-11-22 16:59:15.123456+00"
	tests := []struct {
		name    string
		row     []*string
		topic   string
		key     string
		value   string
		headers map[string]string
		ts      time.Time
		poison  string
	}{
		{
			name:  "template topic",
			row:   []*string{s("0b7e-id"), s("order"), s("o-1"), s("OrderPlaced"), nil, s(`{"total": 5}`), nil, s(ts)},
			topic: "outbox.event.order", key: "o-1", value: `{"total": 5}`,
			headers: map[string]string{"id": "0b7e-id", "event_type": "OrderPlaced", "aggregate_type": "order", "aggregate_id": "o-1"},
			ts:      time.Date(2026, 11, 22, 16, 59, 15, 123456000, time.UTC),
		},
		{
			name:  "topic column overrides the template; JSON headers",
			row:   []*string{s("id2"), s("order"), s("o-2"), s("OrderPaid"), s("payments"), s(`{}`), s(`{"trace": "abc", "n": 3, "gone": null}`), s(ts)},
			topic: "payments", key: "o-2", value: `{}`,
			headers: map[string]string{"id": "id2", "event_type": "OrderPaid", "aggregate_type": "order", "aggregate_id": "o-2",
				"trace": "abc", "n": "3", "gone": "<nil>"},
			ts: time.Date(2026, 11, 22, 16, 59, 15, 123456000, time.UTC),
		},
		{
			name:  "illegal topic name is poison",
			row:   []*string{s("id3"), s("bad topic!*"), s("o-3"), s("X"), nil, s(`{}`), nil, nil},
			topic: "outbox.event.bad topic!*", key: "o-3", value: `{}`,
			headers: map[string]string{"id": "id3", "event_type": "X", "aggregate_type": "bad topic!*", "aggregate_id": "o-3"},
			poison:  "illegal character",
		},
		{
			name:  "headers that are not an object are poison",
			row:   []*string{s("id4"), s("order"), s("o-4"), s("X"), nil, s(`{}`), s(`[1, 2]`), nil},
			topic: "outbox.event.order", key: "o-4", value: `{}`,
			headers: map[string]string{"id": "id4", "event_type": "X", "aggregate_type": "order", "aggregate_id": "o-4"},
			poison:  "not a JSON object",
		},
		{
			name: "NULL template input is poison",
			row:  []*string{s("id5"), nil, s("o-5"), s("X"), nil, s(`{}`), nil, nil},
			key:  "o-5", value: `{}`,
			headers: map[string]string{"id": "id5", "event_type": "X", "aggregate_type": "<nil>", "aggregate_id": "o-5"},
			poison:  `"aggregate_type" is NULL`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(DefaultMapping())
			if err != nil {
				t.Fatal(err)
			}
			mustDecode(t, d, relationMsg(16400, "public", "outbox", outboxCols))
			if m := mustDecode(t, d, beginMsg(0x1000)); m.Kind != KindBegin || m.Xid != 42 {
				t.Fatalf("kind %v xid %d, want begin of xid 42", m.Kind, m.Xid)
			}
			m := mustDecode(t, d, insertMsg(16400, tt.row...))
			if m.Kind != KindEvent {
				t.Fatalf("kind %v, want event", m.Kind)
			}
			ev := m.Event
			if tt.poison != "" {
				if m.Poison == nil || !strings.Contains(m.Poison.Error(), tt.poison) {
					t.Fatalf("poison %v, want one mentioning %q", m.Poison, tt.poison)
				}
			} else if m.Poison != nil {
				t.Fatalf("unexpected poison: %v", m.Poison)
			}
			if ev.Topic != tt.topic || string(ev.Key) != tt.key || string(ev.Value) != tt.value {
				t.Fatalf("topic %q key %q value %q; want %q %q %q", ev.Topic, ev.Key, ev.Value, tt.topic, tt.key, tt.value)
			}
			if got := headerMap(ev.Headers); len(got) != len(tt.headers) {
				t.Fatalf("headers %v, want %v", got, tt.headers)
			} else {
				for k, v := range tt.headers {
					if got[k] != v {
						t.Fatalf("header %s = %q, want %q (all: %v)", k, got[k], v, got)
					}
				}
			}
			if !ev.Timestamp.Equal(tt.ts) {
				t.Fatalf("timestamp %v, want %v", ev.Timestamp, tt.ts)
			}
			if ev.CommitLSN != 0x1000 {
				t.Fatalf("commit LSN %x, want 1000", ev.CommitLSN)
			}
		})
	}
}

func TestDecodeCopiesOutOfTheBuffer(t *testing.T) {
	d, _ := New(DefaultMapping())
	mustDecode(t, d, relationMsg(1, "public", "outbox", outboxCols))
	msg := insertMsg(1, s("id"), s("order"), s("key"), s("E"), nil, s(`{"a": 1}`), nil, nil)
	m := mustDecode(t, d, msg)
	for i := range msg {
		msg[i] = 'X' // the replication buffer is reused for the next message
	}
	if string(m.Event.Key) != "key" || string(m.Event.Value) != `{"a": 1}` {
		t.Fatalf("event shares the input buffer: key %q value %q", m.Event.Key, m.Event.Value)
	}
}

func TestDecodeIgnoresWhatIsNotAnOutboxInsert(t *testing.T) {
	d, _ := New(DefaultMapping())
	mustDecode(t, d, relationMsg(1, "public", "outbox", outboxCols))
	mustDecode(t, d, relationMsg(2, "public", "orders", []col{{"id", 23}}))
	for name, msg := range map[string][]byte{
		"insert on another table": insertMsg(2, s("7")),
		"update":                  append([]byte{'U'}, insertMsg(1)[1:]...),
		"delete":                  {'D', 0, 0, 0, 1, 'K', 0, 0},
		"truncate":                {'T', 0, 0, 0, 1, 0, 0, 0, 0, 1},
		"origin":                  append([]byte{'O', 0, 0, 0, 0, 0, 0, 0, 1}, "x\x00"...),
		"type":                    {'Y', 0, 0, 0, 1},
	} {
		if m := mustDecode(t, d, msg); m.Kind != KindIgnored {
			t.Errorf("%s: kind %v, want ignored", name, m.Kind)
		}
	}
}

func TestDecodeCommitEndLSN(t *testing.T) {
	d, _ := New(DefaultMapping())
	m := mustDecode(t, d, commitMsg(0x10, 0x38))
	if m.Kind != KindCommit || m.EndLSN != 0x38 {
		t.Fatalf("got kind %v end %x; want commit with the end LSN 38, not the commit LSN", m.Kind, m.EndLSN)
	}
}

// TestDecodeUnfitRelation: a Relation message whose columns do not fit the
// mapping (a column renamed or its type changed; PostgreSQL replays such a
// schema of the past after every restart until the slot passes it) makes
// each row of the table poison, with a reason that names the column and
// the fix, instead of stopping the stream; once the schema changes back,
// rows are relayed again.
func TestDecodeUnfitRelation(t *testing.T) {
	// change returns outboxCols with column from renamed to (and of type
	// oid, if not 0).
	change := func(from, to string, oid uint32) []col {
		out := append([]col(nil), outboxCols...)
		for i := range out {
			if out[i].name == from {
				out[i].name = to
				if oid != 0 {
					out[i].oid = oid
				}
			}
		}
		return out
	}
	tests := []struct {
		name    string
		headers []string // the header columns, when not the default
		cols    []col
		want    string // in the Relation's Unfit and in each row's Poison
		missing string
		fix     string
	}{
		{"key column renamed", nil, change("aggregate_id", "aggregateid", 0), `no column "aggregate_id" (the record key)`, "aggregate_id", "--key-column"},
		{"payload column renamed", nil, change("payload", "body", 0), `no column "payload" (the payload)`, "payload", "--payload-column"},
		{"header column renamed", nil, change("event_type", "type", 0), `no column "event_type" (the header column)`, "event_type", "--header-columns"},
		{"template input renamed", []string{"event_type"}, change("aggregate_type", "kind", 0), `no column "aggregate_type" (the topic template input)`, "aggregate_type", "--topic-template"},
		{"timestamp of type text", nil, change("created_at", "created_at", 25), `timestamp column "created_at" has type text`, "", "--timestamp-column"},
	}
	row := insertMsg(7, s("id-1"), s("order"), s("o-1"), s("OrderPlaced"), nil, s(`{"n": 1}`), nil, s("2026-11-22 16:59:15+00"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := DefaultMapping()
			if tt.headers != nil {
				m.HeaderColumns = tt.headers
			}
			d, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			rel := mustDecode(t, d, relationMsg(7, "public", "outbox", tt.cols))
			if rel.Kind != KindRelation || rel.Relation.OID != 7 {
				t.Fatalf("kind %v oid %d, want the mapped table's Relation with oid 7", rel.Kind, rel.Relation.OID)
			}
			unfit := rel.Relation.Unfit
			if unfit == nil || !strings.Contains(unfit.Error(), tt.want) || !strings.Contains(unfit.Error(), tt.fix) || unfit.Missing != tt.missing {
				t.Fatalf("Unfit %v, want one saying %q and %s, missing %q", unfit, tt.want, tt.fix, tt.missing)
			}
			if err := m.CheckColumns(names(tt.cols), types(tt.cols)); err == nil || err.Error() != unfit.Error() {
				t.Fatalf("CheckColumns: %v, want the Relation's %v", err, unfit)
			}

			msg := mustDecode(t, d, row)
			if msg.Kind != KindEvent || msg.Poison == nil || !strings.Contains(msg.Poison.Error(), tt.want) {
				t.Fatalf("row: kind %v poison %v, want an event parked for %q", msg.Kind, msg.Poison, tt.want)
			}
			if string(msg.Event.ID) != "id-1" {
				t.Errorf("the parked copy lost the id: %q", msg.Event.ID)
			}
			// A copy without a required column must never be delivered: it
			// gets no topic. One with an unusable timestamp is whole but
			// for the timestamp.
			switch {
			case tt.missing != "" && msg.Event.Topic != "":
				t.Errorf("topic %q for a row without its %s, want none", msg.Event.Topic, tt.missing)
			case tt.missing == "" && (msg.Event.Topic != "outbox.event.order" || !msg.Event.Timestamp.IsZero()):
				t.Errorf("topic %q timestamp %v, want the topic and no timestamp", msg.Event.Topic, msg.Event.Timestamp)
			}

			// The schema changes back.
			if back := mustDecode(t, d, relationMsg(7, "public", "outbox", outboxCols)); back.Relation.Unfit != nil {
				t.Fatalf("the default layout is unfit: %v", back.Relation.Unfit)
			}
			msg = mustDecode(t, d, row)
			if msg.Poison != nil || string(msg.Event.Key) != "o-1" || msg.Event.Timestamp.IsZero() {
				t.Fatalf("after the schema changed back: poison %v key %q timestamp %v", msg.Poison, msg.Event.Key, msg.Event.Timestamp)
			}
		})
	}
}

func names(cols []col) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

func types(cols []col) []uint32 {
	out := make([]uint32, len(cols))
	for i, c := range cols {
		out[i] = c.oid
	}
	return out
}

func TestCheckColumnsFits(t *testing.T) {
	if err := DefaultMapping().CheckColumns(names(outboxCols), types(outboxCols)); err != nil {
		t.Fatalf("the default layout: %v", err)
	}
}

func TestDecodeMalformed(t *testing.T) {
	d, _ := New(DefaultMapping())
	mustDecode(t, d, relationMsg(1, "public", "outbox", outboxCols))
	full := insertMsg(1, s("id"), s("order"), s("key"), s("E"), nil, s(`{}`), nil, nil)
	for name, msg := range map[string][]byte{
		"empty":            {},
		"short begin":      {'B', 1, 2},
		"short commit":     {'C', 0, 1},
		"truncated insert": full[:len(full)-3],
		"unknown relation": insertMsg(99, s("x")),
	} {
		if _, err := d.Decode(msg); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v, want ErrMalformed", name, err)
		}
	}
}

func TestCustomMapping(t *testing.T) {
	// An "outbox" table of another layout: topic, key and payload_json columns and
	// an epoch-millisecond timestamp.
	m := Mapping{
		Schema: "app", Table: "outbox", IDColumn: "idempotency_key", KeyColumn: "key",
		PayloadColumn: "payload_json", TopicColumn: "topic", TimestampColumn: "created_ms",
	}
	d, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	cols := []col{{"seq", 20}, {"topic", 25}, {"key", 25}, {"payload_json", 25}, {"idempotency_key", 25}, {"status", 25}, {"created_ms", oidInt8}}
	mustDecode(t, d, relationMsg(5, "app", "outbox", cols))
	msg := mustDecode(t, d, insertMsg(5, s("1"), s("orders.v1"), s("k1"), s(`{"x":1}`), s("idem-1"), s("pending"), s("1700000000123")))
	ev := msg.Event
	if msg.Poison != nil || ev.Topic != "orders.v1" || string(ev.Key) != "k1" || string(ev.ID) != "idem-1" {
		t.Fatalf("got %+v poison %v", ev, msg.Poison)
	}
	if !ev.Timestamp.Equal(time.UnixMilli(1700000000123)) {
		t.Fatalf("timestamp %v", ev.Timestamp)
	}
	if hs := headerMap(ev.Headers); len(hs) != 1 || hs["id"] != "idem-1" {
		t.Fatalf("headers %v, want only id", hs)
	}
	// The same table name in another schema is not the outbox.
	mustDecode(t, d, relationMsg(6, "public", "outbox", cols))
	if got := mustDecode(t, d, insertMsg(6, s("1"), s("t"), s("k"), s("{}"), s("i"), s("p"), s("1"))); got.Kind != KindIgnored {
		t.Fatalf("insert on public.outbox decoded as %v for a mapping of app.outbox", got.Kind)
	}
}

func TestValidTopic(t *testing.T) {
	for name, ok := range map[string]bool{
		"outbox.event.order": true, "a_b-C.9": true, "": false, ".": false, "..": false,
		"bad topic": false, "x/y": false, strings.Repeat("a", 249): true, strings.Repeat("a", 250): false,
	} {
		if err := ValidTopic(name); (err == nil) != ok {
			t.Errorf("ValidTopic(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestParseTemplate(t *testing.T) {
	for tmpl, wantErr := range map[string]bool{
		"outbox.event.{aggregate_type}": false, "plain": false, "{a}.{b}": false, "x.{": true, "x.{}": true,
	} {
		if _, err := parseTemplate(tmpl); (err != nil) != wantErr {
			t.Errorf("parseTemplate(%q) error %v, want error=%v", tmpl, err, wantErr)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		typ  uint32
		unit TimestampUnit
		want time.Time
	}{
		{"2026-11-22 16:59:15.123456+00", oidTimestamptz, UnitUnset, time.Date(2026, 11, 22, 16, 59, 15, 123456000, time.UTC)},
		{"2026-11-22 16:59:15.1+00", oidTimestamptz, UnitUnset, time.Date(2026, 11, 22, 16, 59, 15, 100000000, time.UTC)},
		{"2026-11-22 16:59:15+00", oidTimestamptz, UnitUnset, time.Date(2026, 11, 22, 16, 59, 15, 0, time.UTC)},
		{"2026-11-22 18:59:15.5+02", oidTimestamptz, UnitUnset, time.Date(2026, 11, 22, 16, 59, 15, 500000000, time.UTC)},
		{"2026-11-22 22:29:15+05:30", oidTimestamptz, UnitUnset, time.Date(2026, 11, 22, 16, 59, 15, 0, time.UTC)},
		{"infinity", oidTimestamptz, UnitUnset, time.Time{}},
		{"2026-11-22 16:59:15.25", oidTimestamp, UnitUnset, time.Date(2026, 11, 22, 16, 59, 15, 250000000, time.UTC)},
		{"1700000000123", oidInt8, UnitUnset, time.UnixMilli(1700000000123)},
		// A bigint in its unit, or judged by its magnitude; an ambiguous
		// one read as milliseconds.
		{"1700000000", oidInt8, UnitUnset, time.Unix(1700000000, 0)},
		{"1700000000", oidInt8, UnitSeconds, time.Unix(1700000000, 0)},
		{"1700000000", oidInt8, UnitMillis, time.UnixMilli(1700000000)},
		{"1700000000123456", oidInt8, UnitUnset, time.UnixMicro(1700000000123456)},
		{"1700000000123456", oidInt8, UnitMicros, time.UnixMicro(1700000000123456)},
		{"1700000000123", oidInt8, UnitMillis, time.UnixMilli(1700000000123)},
		{"86400", oidInt8, UnitUnset, time.UnixMilli(86400)},
		{"86400", oidInt8, UnitSeconds, time.Unix(86400, 0)},
	}
	for _, tt := range tests {
		if got := parseTimestamp([]byte(tt.in), tt.typ, tt.unit, nil); !got.Equal(tt.want) {
			t.Errorf("parseTimestamp(%q, %q) = %v, want %v", tt.in, tt.unit, got, tt.want)
		}
	}
	// Local wall time of the table's zone: New York is UTC-5 in November,
	// UTC-4 in July; a timestamptz is an instant whatever the zone.
	for _, tt := range []struct {
		in   string
		typ  uint32
		want time.Time
	}{
		{"2026-11-22 11:59:15.25", oidTimestamp, time.Date(2026, 11, 22, 16, 59, 15, 250000000, time.UTC)},
		{"2026-07-01 08:00:00", oidTimestamp, time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)},
		{"2026-11-22 16:59:15+00", oidTimestamptz, time.Date(2026, 11, 22, 16, 59, 15, 0, time.UTC)},
	} {
		if got := parseTimestamp([]byte(tt.in), tt.typ, UnitUnset, ny); !got.Equal(tt.want) {
			t.Errorf("parseTimestamp(%q) in New York = %v, want %v", tt.in, got, tt.want)
		}
	}
	if _, err := (Mapping{Schema: "public", Table: "t", PayloadColumn: "p", TopicTemplate: "x", TimeZone: "Mars/Olympus"}).Location(); err == nil ||
		!strings.Contains(err.Error(), "America/New_York") {
		t.Errorf("an unknown time zone: %v, want an error that names a good one", err)
	}
}

// TestEventHoldsOnlyItsColumns: a row with a large column the mapping does
// not use yields an event that allocates (and so holds) no more than its
// Size, wherever the large column is and whatever is NULL; the in-flight
// byte limit counts Size.
func TestEventHoldsOnlyItsColumns(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	withBlob := func(at int) []col {
		cols := append([]col{}, outboxCols[:at]...)
		cols = append(cols, col{"blob", 25})
		return append(cols, outboxCols[at:]...)
	}
	valsWithBlob := func(at int, vals ...*string) []*string {
		r := append([]*string{}, vals[:at]...)
		r = append(r, &big)
		return append(r, vals[at:]...)
	}
	ts := s("2026-11-22 16:59:15.123456+00")
	full := []*string{s("5f0c1a5e-9d4b-4c1e-8f3a-2b6d7e8f9a0b"), s("order"), s("key-42"), s("OrderPlaced"), nil, s(`{"total": 5}`), nil, ts}
	tests := []struct {
		name string
		at   int // where the unmapped column is
		vals []*string
	}{
		{"large column first", 0, full},
		{"large column between", 5, full},
		{"large column last", len(outboxCols), full},
		{"topic column set", 3, []*string{s("id"), s("order"), s("k"), s("E"), s("explicit.topic"), s(`{}`), nil, ts}},
		{"NULL id and payload", 2, []*string{nil, s("order"), s("k"), s("E"), nil, nil, nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(DefaultMapping())
			if err != nil {
				t.Fatal(err)
			}
			mustDecode(t, d, relationMsg(1, "public", "outbox", withBlob(tt.at)))
			msg := insertMsg(1, valsWithBlob(tt.at, tt.vals...)...)
			m := mustDecode(t, d, msg) // warm the decoder's reused state
			if m.Poison != nil {
				t.Fatal(m.Poison)
			}
			const runs = 50
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < runs; i++ {
				m, err = d.Decode(msg)
				if err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			perEvent := int(after.TotalAlloc-before.TotalAlloc) / runs
			if size := m.Event.Size(); perEvent > size {
				t.Fatalf("decoding allocated %d bytes per event, more than its Size %d: the event holds bytes the in-flight limit does not count", perEvent, size)
			}
			for _, b := range [][]byte{m.Event.ID, m.Event.Key, m.Event.Value} {
				if cap(b) != len(b) {
					t.Fatalf("a field of %d bytes has a capacity of %d", len(b), cap(b))
				}
			}
			for i := range msg {
				msg[i] = 'X'
			}
			if got, want := string(m.Event.Key), *tt.vals[2]; got != want {
				t.Fatalf("key %q after the message was overwritten, want %q", got, want)
			}
		})
	}
}

// TestAllowedTopics: an event whose whole topic (from the topic column or
// the template) does not match --allowed-topics is poison, with a reason
// that names the topic and the flag; by default topics starting with "_"
// or "connect-" are refused.
func TestAllowedTopics(t *testing.T) {
	tests := []struct {
		allowed string
		topic   string // in the topic column; "" renders the template
		agg     string
		ok      bool
	}{
		{"", "_schemas", "order", false},
		{"", "__consumer_offsets", "order", false},
		{"", "connect-configs", "order", false},
		{"", "", "order", true}, // outbox.event.order
		{"", "connector.events", "order", true},
		{"", "my_topic", "order", true},
		{"", "orders.connect-x", "order", true},
		{`orders\..*`, "orders.v1", "order", true},
		{`orders\..*`, "xorders.v1", "order", false}, // the whole topic must match
		{`orders|payments`, "payments", "order", true},
		{`orders|payments`, "orderspayments", "order", false},
		{`outbox\.event\.(order|payment)`, "", "payment", true},
		{`outbox\.event\.(order|payment)`, "", "refund", false},
		{`.*`, "_schemas", "order", true},
		{`.*`, "connect-offsets", "order", true},
	}
	for _, tt := range tests {
		t.Run(tt.allowed+" "+tt.topic+tt.agg, func(t *testing.T) {
			m := DefaultMapping()
			m.AllowedTopics = tt.allowed
			d, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			mustDecode(t, d, relationMsg(1, "public", "outbox", outboxCols))
			topic := s(tt.topic)
			if tt.topic == "" {
				topic = nil
			}
			// Twice: the second decode takes the interned topic.
			for i := 0; i < 2; i++ {
				msg := mustDecode(t, d, insertMsg(1, s("id"), s(tt.agg), s("k"), s("E"), topic, s(`{}`), nil, nil))
				want := tt.topic
				if want == "" {
					want = "outbox.event." + tt.agg
				}
				if msg.Event.Topic != want {
					t.Fatalf("topic %q, want %q", msg.Event.Topic, want)
				}
				if tt.ok {
					if msg.Poison != nil {
						t.Fatalf("topic %q refused: %v", want, msg.Poison)
					}
					continue
				}
				if msg.Poison == nil {
					t.Fatalf("topic %q allowed, want it refused", want)
				}
				for _, part := range []string{`"` + want + `"`, "--allowed-topics"} {
					if !strings.Contains(msg.Poison.Error(), part) {
						t.Fatalf("reason %q does not mention %s", msg.Poison, part)
					}
				}
			}
		})
	}
}

func TestAllowedTopicsMustBeARegularExpression(t *testing.T) {
	for _, pattern := range []string{`orders.(`, `a)|(b`, `[`} {
		m := DefaultMapping()
		m.AllowedTopics = pattern
		if _, err := New(m); err == nil || !strings.Contains(err.Error(), "--allowed-topics") {
			t.Errorf("New with allowed topics %q: error %v, want one naming --allowed-topics", pattern, err)
		}
	}
}

// TestBeginCarriesTheCommitTime: pgoutput's microseconds since 2000-01-01
// become the transaction's commit time.
func TestBeginCarriesTheCommitTime(t *testing.T) {
	d, err := New(DefaultMapping())
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 23, 4, 5, 6, 789000, time.UTC)
	b := []byte{'B'}
	b = binary.BigEndian.AppendUint64(b, 0x1000)
	b = binary.BigEndian.AppendUint64(b, uint64(want.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds()))
	b = binary.BigEndian.AppendUint32(b, 42)
	m := mustDecode(t, d, b)
	if !m.CommitTime.Equal(want) {
		t.Errorf("commit time %s, want %s", m.CommitTime, want)
	}
}

// TestHeadersColumnDoesNotRepeatTheRelaysHeaders: a key of the headers
// column named like one of the relay's own headers (id, a header column)
// is left out: the record carries each name once, the relay's value.
func TestHeadersColumnDoesNotRepeatTheRelaysHeaders(t *testing.T) {
	d, err := New(DefaultMapping())
	if err != nil {
		t.Fatal(err)
	}
	mustDecode(t, d, relationMsg(1, "public", "outbox", outboxCols))
	mustDecode(t, d, beginMsg(0x10))
	m := mustDecode(t, d, insertMsg(1, s("row-id"), s("order"), s("o-1"), s("OrderPlaced"), nil, s(`{}`),
		s(`{"id": "spoofed", "event_type": "Other", "trace": "t-1"}`), nil))
	if m.Poison != nil {
		t.Fatal(m.Poison)
	}
	count := map[string]int{}
	for _, h := range m.Event.Headers {
		count[h.Key]++
	}
	for k, n := range count {
		if n != 1 {
			t.Errorf("header %q appears %d times: %v", k, n, m.Event.Headers)
		}
	}
	if got := headerMap(m.Event.Headers); got["id"] != "row-id" || got["event_type"] != "OrderPlaced" || got["trace"] != "t-1" {
		t.Errorf("headers %v: want the row's id and event_type, and trace from the headers column", got)
	}
}

// TestByteaKeyAndPayloadAreTheirBytes: a bytea key or payload arrives as
// the bytes it holds (a Protobuf message), not as PostgreSQL's \x hex text;
// text that is not hex makes the row poison, naming the column.
func TestByteaKeyAndPayloadAreTheirBytes(t *testing.T) {
	cols := append([]col(nil), outboxCols...)
	cols[2] = col{"aggregate_id", oidBytea}
	cols[5] = col{"payload", oidBytea}
	d, err := New(DefaultMapping())
	if err != nil {
		t.Fatal(err)
	}
	mustDecode(t, d, relationMsg(1, "public", "outbox", cols))
	mustDecode(t, d, beginMsg(0x10))
	proto := []byte{0x0a, 0x03, 'f', 'o', 'o', 0x10, 0x96, 0x01, 0x00, 0xff}
	m := mustDecode(t, d, insertMsg(1, s("id"), s("order"), s(`\x6b31`), s("X"), nil, s(`\x`+hexOf(proto)), nil, nil))
	if m.Poison != nil {
		t.Fatal(m.Poison)
	}
	if string(m.Event.Value) != string(proto) || string(m.Event.Key) != "k1" {
		t.Errorf("value %x key %q, want %x and k1", m.Event.Value, m.Event.Key, proto)
	}
	if m := mustDecode(t, d, insertMsg(1, s("id"), s("order"), s(`\x6b31`), s("X"), nil, s(`\xzz`), nil, nil)); m.Poison == nil ||
		!strings.Contains(m.Poison.Error(), `"payload"`) {
		t.Errorf("a payload that is not hex: poison %v, want one naming the column", m.Poison)
	}
	if m := mustDecode(t, d, insertMsg(1, s("id"), s("order"), nil, s("X"), nil, s(`\x00`), nil, nil)); m.Poison != nil || m.Event.Key != nil {
		t.Errorf("a NULL bytea key: key %q poison %v, want nil and none", m.Event.Key, m.Poison)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestJudgeUnit: the magnitudes of epoch seconds, milliseconds and
// microseconds of the years 2001 to 5138 do not overlap; the rest is
// ambiguous.
func TestJudgeUnit(t *testing.T) {
	now := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	for v, want := range map[int64]TimestampUnit{
		now.Unix(): UnitSeconds, now.UnixMilli(): UnitMillis, now.UnixMicro(): UnitMicros,
		1e9: UnitSeconds, 1e11 - 1: UnitSeconds, 1e11: UnitMillis, 1e14: UnitMicros, 1e17 - 1: UnitMicros,
		0: UnitUnset, 999_999_999: UnitUnset, -now.Unix(): UnitUnset, now.UnixNano(): UnitUnset,
	} {
		got, ok := JudgeUnit(v)
		if got != want || ok != (want != UnitUnset) {
			t.Errorf("JudgeUnit(%d) = %q, %v, want %q", v, got, ok, want)
		}
	}
	for _, u := range []TimestampUnit{UnitSeconds, UnitMillis, UnitMicros} {
		if got := u.Time(u.Epoch(now)); !got.Equal(now) {
			t.Errorf("%s: %v back as %v", u, now, got)
		}
	}
	if _, err := ParseTimestampUnit("ns"); err == nil {
		t.Error("unit ns accepted")
	}
}
