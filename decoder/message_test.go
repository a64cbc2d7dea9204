package decoder

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

// logicalMsg builds a pgoutput Message (protocol 1): flags, the message's
// LSN, the prefix, the content's length and bytes.
func logicalMsg(transactional bool, lsn uint64, prefix, content string) []byte {
	b := []byte{'M', 0}
	if transactional {
		b[1] = 1
	}
	b = binary.BigEndian.AppendUint64(b, lsn)
	b = append(append(b, prefix...), 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(content)))
	return append(b, content...)
}

// beginAt is a Begin of a transaction committing at lsn at time at.
func beginAt(lsn uint64, at time.Time) []byte {
	b := []byte{'B'}
	b = binary.BigEndian.AppendUint64(b, lsn)
	b = binary.BigEndian.AppendUint64(b, uint64(at.UnixMicro()-946684800*1e6))
	return binary.BigEndian.AppendUint32(b, 42)
}

func newSourcesT(t *testing.T, tables []Mapping, messages ...MessageMapping) *Decoder {
	t.Helper()
	d, err := NewSources(tables, messages)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// str is the text of b, "<nil>" for nil.
func str(b []byte) string {
	if b == nil {
		return "<nil>"
	}
	return string(b)
}

// msgLSN is the WAL position of the messages of the tests below, and
// msgID its text.
const (
	msgLSN = 0x16B3748
	msgID  = "0/16B3748"
)

type messageCase struct {
	name    string
	content string
	// topic, key, id and value are the event's; "<nil>" for nil. id ""
	// means msgID.
	topic, key, id, value string
	headers               map[string]string // nil: only the id
	poison                string            // a part of the reason; "" for none
}

func checkMessage(t *testing.T, m Message, tc messageCase) {
	t.Helper()
	if m.Kind != KindEvent {
		t.Fatalf("kind %v, want KindEvent", m.Kind)
	}
	switch {
	case tc.poison == "" && m.Poison != nil:
		t.Fatalf("poison %v", m.Poison)
	case tc.poison != "" && (m.Poison == nil || !strings.Contains(m.Poison.Error(), tc.poison)):
		t.Fatalf("poison %v, want one saying %q", m.Poison, tc.poison)
	}
	if tc.poison != "" && !strings.Contains(m.Poison.Error(), `messages "outbox"`) {
		t.Fatalf("poison %v does not name the prefix", m.Poison)
	}
	id := tc.id
	if id == "" {
		id = msgID
	}
	ev := m.Event
	for _, f := range []struct{ field, got, want string }{
		{"topic", ev.Topic, tc.topic}, {"key", str(ev.Key), tc.key}, {"id", str(ev.ID), id}, {"value", str(ev.Value), tc.value},
	} {
		if f.got != f.want {
			t.Errorf("%s %q, want %q", f.field, f.got, f.want)
		}
	}
	want := map[string]string{"id": id}
	for k, v := range tc.headers {
		want[k] = v
	}
	if got := headerMap(ev.Headers); !equalMaps(got, want) {
		t.Errorf("headers %v, want %v", got, want)
	}
	if len(ev.Headers) == 0 || ev.Headers[0].Key != "id" {
		t.Errorf("the first header is not the id: %v", headerMap(ev.Headers))
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestDecodeEnvelope checks each rule of the envelope: what each member
// may be, what its absence means, and that a content that cannot become a
// record is poison with the content as its value.
func TestDecodeEnvelope(t *testing.T) {
	const raw = "<raw>" // value: the whole content (a content that could not be read; one read but refused keeps its payload)
	tests := []messageCase{
		{name: "every member", content: `{"topic": "orders", "key": "o-1", "id": "e-1", "headers": {"trace": "abc", "n": 3, "gone": null}, "payload": {"total": 5}}`,
			topic: "orders", key: "o-1", id: "e-1", value: `{"total": 5}`, headers: map[string]string{"trace": "abc", "n": "3", "gone": "<nil>"}},
		{name: "only the payload: the mapping's topic, no key, the WAL position as id", content: `{"payload": {"a": 1}}`,
			topic: "fallback", key: "<nil>", value: `{"a": 1}`},
		{name: "nulls mean absent", content: `{"topic": null, "key": null, "id": null, "headers": null, "payload": [1, 2]}`,
			topic: "fallback", key: "<nil>", value: `[1, 2]`},
		{name: "number key and id: their JSON text", content: `{"key": 42, "id": -1.5e3, "payload": 1}`,
			topic: "fallback", key: "42", id: "-1.5e3", value: `1`},
		{name: "escaped strings are unescaped", content: `{"topic": "ord\u0065rs", "key": "a\"b", "id": "\u00e9", "payload": "line\nnext"}`,
			topic: "orders", key: `a"b`, id: "é", value: "line\nnext"},
		{name: "a string payload is its text", content: `{"payload": "plain text"}`, topic: "fallback", key: "<nil>", value: "plain text"},
		{name: "an empty string payload is an empty value", content: `{"payload": ""}`, topic: "fallback", key: "<nil>", value: ""},
		{name: "a null payload is no value", content: `{"payload": null}`, topic: "fallback", key: "<nil>", value: "<nil>"},
		{name: "other payloads are their JSON text as written", content: "{\"payload\":{ \"b\" :[true,null ,1.50]} }",
			topic: "fallback", key: "<nil>", value: `{ "b" :[true,null ,1.50]}`},
		{name: "escaped member names", content: `{"\u0070ayload": 7}`, topic: "fallback", key: "<nil>", value: "7"},
		{name: "the id header wins over a member id of the headers", content: `{"id": "mine", "headers": {"id": "theirs", "x": "y"}, "payload": 1}`,
			topic: "fallback", key: "<nil>", id: "mine", value: "1", headers: map[string]string{"x": "y"}},
		{name: "an empty headers object", content: `{"headers": {}, "payload": 1}`, topic: "fallback", key: "<nil>", value: "1"},

		{name: "no payload", content: `{"topic": "orders", "key": "k"}`, topic: "orders", key: "k", value: raw,
			poison: `no member "payload": give it, null for a record without a value`},
		{name: "an unknown member", content: `{"topic": "orders", "payload": 1, "extra": 2}`, topic: "orders", key: "<nil>", value: raw,
			poison: `a member "extra": an envelope's members are topic, key, id, headers and payload only`},
		{name: "a member twice", content: `{"payload": 1, "payload": 2}`, topic: "fallback", key: "<nil>", value: raw,
			poison: `the member "payload" twice`},
		{name: "not JSON", content: `{"payload": `, topic: "fallback", key: "<nil>", value: raw, poison: "is not JSON"},
		{name: "empty content", content: ``, topic: "fallback", key: "<nil>", value: raw, poison: "is not JSON"},
		{name: "not an object", content: `[{"payload": 1}]`, topic: "fallback", key: "<nil>", value: raw, poison: "the content is an array, not a JSON object"},
		{name: "a string, not an object", content: `"text"`, topic: "fallback", key: "<nil>", value: raw, poison: "the content is a string, not a JSON object"},
		{name: "key an object", content: `{"key": {"a": 1}, "payload": 1}`, topic: "fallback", key: "<nil>", value: raw,
			poison: `member "key" is an object: want a string, a number or null`},
		{name: "key a boolean", content: `{"key": true, "payload": 1}`, topic: "fallback", key: "<nil>", value: raw,
			poison: `member "key" is a boolean`},
		{name: "id an array", content: `{"id": [1], "payload": 1}`, topic: "fallback", key: "<nil>", value: raw,
			poison: `member "id" is an array`},
		{name: "topic a number", content: `{"topic": 5, "key": "k", "payload": 1}`, topic: "fallback", key: "k", value: raw,
			poison: `member "topic" is a number: want a string`},
		{name: "topic illegal", content: `{"topic": "bad topic", "payload": 1}`, topic: "bad topic", key: "<nil>", value: "1",
			poison: "illegal character"},
		{name: "topic empty", content: `{"topic": "", "payload": 1}`, topic: "", key: "<nil>", value: "1", poison: "topic name is empty"},
		{name: "topic Kafka's own", content: `{"topic": "__consumer_offsets", "payload": 1}`, topic: "__consumer_offsets", key: "<nil>", value: "1",
			poison: "is not allowed"},
		{name: "headers an array", content: `{"headers": [1], "payload": 1}`, topic: "fallback", key: "<nil>", value: raw,
			poison: `member "headers" is an array: want an object, or null`},
		{name: "headers a string", content: `{"headers": "x", "payload": 1}`, topic: "fallback", key: "<nil>", value: raw,
			poison: `member "headers" is a string`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newSourcesT(t, nil, MessageMapping{Prefix: "outbox", Topic: "fallback"})
			mustDecode(t, d, beginMsg(0x5000))
			if tc.value == raw {
				tc.value = tc.content
			}
			checkMessage(t, mustDecode(t, d, logicalMsg(true, msgLSN, "outbox", tc.content)), tc)
		})
	}
}

// TestEnvelopeTopicNeedsAMappingTopic: without a topic in the envelope or
// the mapping, the message is parked saying so.
func TestEnvelopeTopicNeedsAMappingTopic(t *testing.T) {
	d := newSourcesT(t, nil, MessageMapping{Prefix: "outbox"})
	mustDecode(t, d, beginMsg(0x5000))
	checkMessage(t, mustDecode(t, d, logicalMsg(true, msgLSN, "outbox", `{"key": "k", "payload": 1}`)), messageCase{
		key: "k", value: "1",
		poison: `messages "outbox": the envelope names no topic and messages: gives none for the prefix`,
	})
	checkMessage(t, mustDecode(t, d, logicalMsg(true, msgLSN, "outbox", `{"topic": "t", "payload": 1}`)), messageCase{
		topic: "t", key: "<nil>", value: "1",
	})
}

// TestEnvelopeAllowedTopics: the mapping's AllowedTopics refuses the
// envelope's topics it does not match.
func TestEnvelopeAllowedTopics(t *testing.T) {
	d := newSourcesT(t, nil, MessageMapping{Prefix: "outbox", AllowedTopics: `orders\..*`})
	mustDecode(t, d, beginMsg(0x5000))
	for _, tc := range []messageCase{
		{content: `{"topic": "orders.placed", "payload": 1}`, topic: "orders.placed", key: "<nil>", value: "1"},
		{content: `{"topic": "payments", "payload": 1}`, topic: "payments", key: "<nil>", value: "1",
			poison: `topic "payments" is not allowed: it does not match`},
		{content: `{"topic": "orders.placed", "payload": 2}`, topic: "orders.placed", key: "<nil>", value: "2"},
	} {
		checkMessage(t, mustDecode(t, d, logicalMsg(true, msgLSN, "outbox", tc.content)), tc)
	}
}

// TestDecodePayloadOnly: the whole content is the value, the topic the
// mapping's, the key and id the members the mapping names.
func TestDecodePayloadOnly(t *testing.T) {
	tests := []struct {
		messageCase
		keyField, idField string
	}{
		{messageCase: messageCase{name: "no fields: any content, even not JSON", content: "\x00binary\xff", topic: "events", key: "<nil>", value: "\x00binary\xff"}},
		{messageCase: messageCase{name: "no fields: an empty content", content: "", topic: "events", key: "<nil>", value: ""}},
		{messageCase: messageCase{name: "key and id fields", content: `{"order": "o-1", "event": 17, "x": {}}`, topic: "events", key: "o-1", id: "17",
			value: `{"order": "o-1", "event": 17, "x": {}}`}, keyField: "order", idField: "event"},
		{messageCase: messageCase{name: "one member for both", content: `{"order": "o-1"}`, topic: "events", key: "o-1", id: "o-1",
			value: `{"order": "o-1"}`}, keyField: "order", idField: "order"},
		{messageCase: messageCase{name: "fields absent or null: no key, the WAL position", content: `{"order": null}`, topic: "events", key: "<nil>",
			value: `{"order": null}`}, keyField: "order", idField: "event"},
		{messageCase: messageCase{name: "a nested member is not the field", content: `{"x": {"order": "o-1"}}`, topic: "events", key: "<nil>",
			value: `{"x": {"order": "o-1"}}`}, keyField: "order"},
		{messageCase: messageCase{name: "key field of the wrong type", content: `{"order": [1]}`, topic: "events", key: "<nil>",
			value: `{"order": [1]}`, poison: `the content's member "order" (key_field) is an array`}, keyField: "order"},
		{messageCase: messageCase{name: "id field of the wrong type", content: `{"event": false}`, topic: "events", key: "<nil>",
			value: `{"event": false}`, poison: `the content's member "event" (id_field) is a boolean`}, idField: "event"},
		{messageCase: messageCase{name: "key field twice", content: `{"order": 1, "order": 2}`, topic: "events", key: "2",
			value: `{"order": 1, "order": 2}`, poison: `member "order" (key_field) twice`}, keyField: "order"},
		{messageCase: messageCase{name: "with a key field, not JSON", content: `order=1`, topic: "events", key: "<nil>",
			value: `order=1`, poison: "is not JSON"}, keyField: "order"},
		{messageCase: messageCase{name: "with an id field, not an object", content: `[1, 2]`, topic: "events", key: "<nil>",
			value: `[1, 2]`, poison: "is an array, not a JSON object"}, idField: "event"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newSourcesT(t, nil, MessageMapping{Prefix: "outbox", Topic: "events", PayloadOnly: true, KeyField: tc.keyField, IDField: tc.idField})
			mustDecode(t, d, beginMsg(0x5000))
			checkMessage(t, mustDecode(t, d, logicalMsg(true, msgLSN, "outbox", tc.content)), tc.messageCase)
		})
	}
}

// TestMessageAmongInserts: a message in the middle of a transaction's
// inserts is an event in its place, with the transaction's commit LSN and
// commit time, and the Table index after the tables'.
func TestMessageAmongInserts(t *testing.T) {
	orders := Mapping{Schema: "public", Table: "orders_outbox", PayloadColumn: "payload", TopicTemplate: "orders"}
	d := newSourcesT(t, []Mapping{DefaultMapping(), orders},
		MessageMapping{Prefix: "audit", Topic: "audit"}, MessageMapping{Prefix: "outbox", Topic: "fallback"})
	commit := time.Date(2026, 11, 25, 6, 30, 0, 123456000, time.UTC)
	mustDecode(t, d, relationMsg(16400, "public", "outbox", outboxCols))
	mustDecode(t, d, beginAt(0x9000, commit))
	row := func(id string) []byte {
		return insertMsg(16400, s(id), s("order"), s("o-1"), s("OrderPlaced"), nil, s(`{}`), nil, s("2026-11-22 16:59:15+00"))
	}
	var got []string
	for _, msg := range [][]byte{
		row("row-1"),
		logicalMsg(true, 0x8000, "outbox", `{"key": "o-1", "id": "msg-1", "payload": 1}`),
		logicalMsg(false, 0x8100, "outbox", `{"id": "not transactional", "payload": 1}`),
		row("row-2"),
		logicalMsg(true, 0x8200, "other", `{"id": "unmapped", "payload": 1}`),
		logicalMsg(true, 0x8300, "audit", `{"id": "msg-2", "payload": 2}`),
		commitMsg(0x9000, 0x9038),
	} {
		m := mustDecode(t, d, msg)
		switch m.Kind {
		case KindEvent:
			if m.Poison != nil {
				t.Fatalf("event %s: poison %v", m.Event.ID, m.Poison)
			}
			if m.Event.CommitLSN != 0x9000 {
				t.Errorf("event %s: commit LSN %x, want 9000", m.Event.ID, m.Event.CommitLSN)
			}
			if string(m.Event.ID) != "row-1" && string(m.Event.ID) != "row-2" && !m.Event.Timestamp.Equal(commit) {
				t.Errorf("message %s: timestamp %v, want the commit time %v", m.Event.ID, m.Event.Timestamp, commit)
			}
			got = append(got, string(m.Event.ID)+"@"+string(rune('0'+m.Event.Table)))
		case KindUnmappedMessage:
			got = append(got, "unmapped:"+m.Prefix)
		case KindNonTransactionalMessage:
			got = append(got, "non-transactional:"+m.Prefix)
		case KindIgnored, KindCommit:
		default:
			t.Fatalf("kind %v", m.Kind)
		}
	}
	if want := "row-1@0 msg-1@3 non-transactional:outbox row-2@0 unmapped:other msg-2@2"; strings.Join(got, " ") != want {
		t.Fatalf("events %q, want %q", strings.Join(got, " "), want)
	}
}

// TestMessagesIgnored: non-transactional messages are no event, reported
// with their prefix when it is mapped; a
// transactional message of a prefix nobody mapped (with message sources
// or without) is reported with its prefix, and is no event.
func TestMessagesIgnored(t *testing.T) {
	withSources := newSourcesT(t, nil, MessageMapping{Prefix: "outbox", Topic: "t"})
	tablesOnly := newSourcesT(t, []Mapping{DefaultMapping()})
	for _, tc := range []struct {
		name     string
		d        *Decoder
		msg      []byte
		kind     Kind
		unmapped string
	}{
		{"non-transactional", withSources, logicalMsg(false, msgLSN, "outbox", `{"payload": 1}`), KindNonTransactionalMessage, "outbox"},
		{"non-transactional and malformed", withSources, logicalMsg(false, msgLSN, "outbox", `not json`), KindNonTransactionalMessage, "outbox"},
		{"non-transactional, unmapped", withSources, logicalMsg(false, msgLSN, "other", `{"payload": 1}`), KindIgnored, ""},
		{"unmapped prefix", withSources, logicalMsg(true, msgLSN, "outbox2", `{"payload": 1}`), KindUnmappedMessage, "outbox2"},
		{"a prefix of the prefix", withSources, logicalMsg(true, msgLSN, "out", `{"payload": 1}`), KindUnmappedMessage, "out"},
		{"empty prefix", withSources, logicalMsg(true, msgLSN, "", `{"payload": 1}`), KindUnmappedMessage, ""},
		{"no message sources", tablesOnly, logicalMsg(true, msgLSN, "outbox", `{"payload": 1}`), KindUnmappedMessage, "outbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustDecode(t, tc.d, tc.msg)
			if m.Kind != tc.kind || m.Prefix != tc.unmapped {
				t.Fatalf("kind %v prefix %q, want %v %q", m.Kind, m.Prefix, tc.kind, tc.unmapped)
			}
		})
	}
}

// TestUnmappedPrefixesKept: the prefix of an unmapped message is the same
// string each time, without a new one per message, and the prefixes kept
// are bounded.
func TestUnmappedPrefixesKept(t *testing.T) {
	d := newSourcesT(t, nil, MessageMapping{Prefix: "outbox", Topic: "t"})
	msg := logicalMsg(true, msgLSN, "renamed", `{"payload": 1}`)
	if allocs := testing.AllocsPerRun(100, func() {
		if m, err := d.Decode(msg); err != nil || m.Prefix != "renamed" {
			t.Fatalf("%v, %v", m.Prefix, err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per unmapped message of a prefix seen before, want 0", allocs)
	}
	for i := range 2 * maxUnmappedPrefixes {
		if m := mustDecode(t, d, logicalMsg(true, msgLSN, fmt.Sprint("p", i), `{}`)); m.Prefix != fmt.Sprint("p", i) {
			t.Fatalf("prefix %q, want p%d", m.Prefix, i)
		}
	}
	if len(d.unmapped) > maxUnmappedPrefixes {
		t.Errorf("%d prefixes kept, want at most %d", len(d.unmapped), maxUnmappedPrefixes)
	}
}

// TestDecodeMalformedMessage: a truncated or inconsistent Message is
// ErrMalformed, whether or not its prefix is mapped.
func TestDecodeMalformedMessage(t *testing.T) {
	good := logicalMsg(true, msgLSN, "outbox", `{"payload": 1}`)
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"only the type", []byte{'M'}},
		{"no LSN", good[:5]},
		{"no prefix", good[:10]},
		{"unterminated prefix", good[:13]},
		{"no content length", good[:17]},
		{"short content length", good[:19]},
		{"content shorter than its length", good[:len(good)-1]},
		{"content longer than its length", append(append([]byte{}, good...), '}')},
		{"length past 2 GiB", append(logicalMsg(true, msgLSN, "outbox", "")[:17], 0xFF, 0xFF, 0xFF, 0xFF)},
		{"non-transactional, truncated", logicalMsg(false, msgLSN, "outbox", "x")[:19]},
		{"unknown flags", append([]byte{'M', 2}, good[2:]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range []*Decoder{
				newSourcesT(t, nil, MessageMapping{Prefix: "outbox", Topic: "t"}),
				newSourcesT(t, []Mapping{DefaultMapping()}),
			} {
				if _, err := d.Decode(tc.msg); !errors.Is(err, ErrMalformed) {
					t.Fatalf("Decode(%q) = %v, want ErrMalformed", tc.msg, err)
				}
			}
		})
	}
}

// TestMessageCopiesOutOfTheBuffer: a message's event keeps its bytes after
// the replication buffer is reused.
func TestMessageCopiesOutOfTheBuffer(t *testing.T) {
	d := newSourcesT(t, nil, MessageMapping{Prefix: "outbox"})
	buf := logicalMsg(true, msgLSN, "outbox", `{"topic": "t", "key": "k", "id": "i", "headers": {"h": "v"}, "payload": "p"}`)
	m := mustDecode(t, d, buf)
	for i := range buf {
		buf[i] = 'X'
	}
	ev := m.Event
	if string(ev.Key) != "k" || string(ev.ID) != "i" || string(ev.Value) != "p" || headerMap(ev.Headers)["h"] != "v" {
		t.Fatalf("event changed with the buffer: key %q id %q value %q headers %v", ev.Key, ev.ID, ev.Value, headerMap(ev.Headers))
	}
}

func TestNewSources(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tables   []Mapping
		messages []MessageMapping
		err      string
	}{
		{name: "messages only", messages: []MessageMapping{{Prefix: "outbox"}}},
		{name: "tables and messages", tables: []Mapping{DefaultMapping()}, messages: []MessageMapping{{Prefix: "outbox"}, {Prefix: "audit"}}},
		{name: "tables only", tables: []Mapping{DefaultMapping()}},
		{name: "nothing", err: "nothing to relay"},
		{name: "a prefix twice", messages: []MessageMapping{{Prefix: "outbox"}, {Prefix: "a"}, {Prefix: "outbox", Topic: "t"}},
			err: `prefix "outbox" is given twice`},
		{name: "no prefix", messages: []MessageMapping{{Topic: "t"}}, err: "prefix is not set"},
		{name: "payload-only without a topic", messages: []MessageMapping{{Prefix: "p", PayloadOnly: true}}, err: "needs a topic"},
		{name: "bad allowed topics", messages: []MessageMapping{{Prefix: "p", AllowedTopics: "("}}, err: "not a Go regular expression"},
		{name: "a bad table", tables: []Mapping{{Schema: "public"}}, messages: []MessageMapping{{Prefix: "p"}}, err: "table is not set"},
		{name: "a table twice", tables: []Mapping{DefaultMapping(), DefaultMapping()}, messages: []MessageMapping{{Prefix: "p"}}, err: "mapped twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewSources(tc.tables, tc.messages)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(d.tables) != len(tc.tables) || len(d.sources) != len(tc.messages) {
				t.Fatalf("%d tables and %d sources", len(d.tables), len(d.sources))
			}
			for j, src := range d.sources {
				if src.index != len(tc.tables)+j {
					t.Errorf("messages[%d] has index %d, want %d", j, src.index, len(tc.tables)+j)
				}
			}
		})
	}
}

// TestRowsOfMessagesOnly: a decoder of messages only has no table to read
// rows of, and says so rather than failing later.
func TestRowsOfMessagesOnly(t *testing.T) {
	d := newSourcesT(t, nil, MessageMapping{Prefix: "outbox"})
	if _, err := d.Rows(names(outboxCols), types(outboxCols)); err == nil {
		t.Fatal("Rows of a decoder without tables: no error")
	}
}

// TestAppendLSN: a message's id without one is its LSN as pglogrepl
// prints it.
func TestAppendLSN(t *testing.T) {
	for _, lsn := range []uint64{0, 1, msgLSN, 0xABCDEF0123456789, 0xFFFFFFFFFFFFFFFF, 0x100000000} {
		if got, want := string(appendLSN(nil, lsn)), pglogrepl.LSN(lsn).String(); got != want {
			t.Errorf("appendLSN(%x) = %q, want %q", lsn, got, want)
		}
	}
}

// TestMessageHoldsOnlyItsParts: a message's event holds copies of its key,
// id and value only, never the rest of the content (a megabyte of
// whitespace or of a member it does not keep), so the in-flight byte limit,
// which counts Size, covers it; a poison one holds the content, its value.
func TestMessageHoldsOnlyItsParts(t *testing.T) {
	pad := strings.Repeat(" ", 1<<20)
	big := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, content string
		poison        bool
	}{
		{"whitespace between members", `{"topic": "t", "key": "k",` + pad + `"payload": {"total": 5}}`, false},
		{"whitespace in the headers", `{"topic": "t", "headers": {` + pad + `}, "payload": 1}`, false},
		{"a large payload", `{"topic": "t", "payload": "` + big + `"}`, false},
		{"a large unknown member: poison", `{"topic": "t", "payload": 1, "blob": "` + big + `"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newSourcesT(t, nil, MessageMapping{Prefix: "outbox"})
			msg := logicalMsg(true, msgLSN, "outbox", tc.content)
			m := mustDecode(t, d, msg) // warm the decoder's reused state
			if (m.Poison != nil) != tc.poison {
				t.Fatalf("poison %v", m.Poison)
			}
			const runs = 20
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < runs; i++ {
				m = mustDecode(t, d, msg)
			}
			runtime.ReadMemStats(&after)
			// The slack covers a large allocation's rounding to pages and
			// the headers' parsing, garbage at once; not the megabyte of
			// content an event must not keep.
			const slack = 16 << 10
			perEvent := int(after.TotalAlloc-before.TotalAlloc) / runs
			if size := m.Event.Size(); perEvent > size+slack {
				t.Fatalf("decoding allocated %d bytes per event, more than its Size %d: the event holds bytes the in-flight limit does not count", perEvent, size)
			}
			for _, b := range [][]byte{m.Event.ID, m.Event.Key, m.Event.Value} {
				if cap(b) != len(b) {
					t.Fatalf("a field of %d bytes has a capacity of %d", len(b), cap(b))
				}
			}
		})
	}
}

// TestValidJSON: validJSON says what json.Valid says.
func TestValidJSON(t *testing.T) {
	for _, s := range []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-1E-2`, `true`, `false`, `null`, ` {"a" : [ 1 , {"b": null} ] } `,
		`"\u00e9\n\t\/\\\""`, "\"\xff\xfe\"", `{"a":1,"a":2}`,
		``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`, `01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`, `tru`, `nul`, `truex`,
		`"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01\"", `"abc`, `{} {}`, `[1 2]`, `{"a":1 "b":2}`, `NaN`, `[-]`,
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
	} {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.40q) = %v, json.Valid says %v", s, got, want)
		}
	}
}
