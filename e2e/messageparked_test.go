package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A message that cannot become its record is parked DEAD, as a bad row
// is: with its reason and its raw content, named by its source
// (message:outbox), and the stream goes on.

// parkedMessage is what the test reads of a row of `cdc-relay failed list
// --json`.
type parkedMessage struct {
	ID          int64   `json:"id"`
	Status      string  `json:"status"`
	LastError   string  `json:"last_error"`
	SourceTable *string `json:"source_table"`
	Topic       string  `json:"topic"`
	Key         *string `json:"key"`
}

// parkedMessages runs `cdc-relay failed list --json --limit 0` and returns
// its rows by reason.
func (e *env) parkedMessages() []parkedMessage {
	e.t.Helper()
	out, err := exec.Command(relayBin, "failed", "list", "--json", "--limit", "0", "--postgres-url", e.url).Output()
	if err != nil {
		e.t.Fatalf("failed list: %v\n%s", err, out)
	}
	var rows []parkedMessage
	if err := json.Unmarshal(out, &rows); err != nil {
		e.t.Fatalf("failed list --json: %v\n%s", err, out)
	}
	return rows
}

// TestMalformedMessageParked: content that is not JSON, or not an object,
// an envelope with a member it does not know, without a payload, naming no
// topic (and the mapping gives none), or a topic --allowed-topics refuses:
// each is parked DEAD with a reason that says what is wrong, its payload
// kept as the record value when the envelope could be read, else its
// whole content; `cdc-relay failed list` shows each with the
// source message:outbox; a later good message arrives and the slot moves
// past them all.
func TestMalformedMessageParked(t *testing.T) {
	parallel(t)
	e := newMessageEnv(t)
	p := e.startRelay(messageArgs...)
	topic := e.prefix + ".msg"
	bad := []struct {
		content string
		reason  string // in the parked row's last error, case aside
		value   string // the parked value when it is the payload, not the content
	}{
		{`not json {`, "json", ""},
		{`["an", "array"]`, "object", ""},
		{fmt.Sprintf(`{"topic": %q, "key": "k-unknown", "payload": {}, "extra": 1}`, topic), "extra", ""},
		{fmt.Sprintf(`{"topic": %q, "key": "k-no-payload"}`, topic), "payload", ""},
		{`{"key": "k-no-topic", "payload": 1}`, "topic", "1"},
		{`{"topic": "_schemas", "key": "k-refused", "payload": {}}`, "_schemas", "{}"},
		{fmt.Sprintf(`{"topic": %q, "key": "k-headers", "headers": [1], "payload": {}}`, topic), "object", ""},
	}
	ids := map[string]int{} // WAL position → index in bad
	for i, b := range bad {
		ids[emitRaw(t, e.conn, true, "outbox", b.content)] = i
	}
	emit(t, e.conn, topic, "k-good", `"good"`, nil, nil)
	assertValues(t, e.readN(topic, 1, 30*time.Second), []string{"good"})
	e.waitConfirmed(30 * time.Second)

	rows := e.parkedMessages()
	if len(rows) != len(bad) {
		t.Errorf("failed list shows %d rows, want the %d malformed messages: %+v", len(rows), len(bad), rows)
	}
	for _, r := range rows {
		if r.Status != "DEAD" || r.SourceTable == nil || *r.SourceTable != messageSource {
			t.Errorf("parked row %d: status %s, source %v; want DEAD from %s (%s)", r.ID, r.Status, optText(r.SourceTable), messageSource, r.LastError)
		}
	}
	for id, i := range ids {
		want := bad[i].value
		if want == "" {
			want = bad[i].content
		}
		e.checkParkedMessage(id, bad[i].content, bad[i].reason, want)
	}
	out := e.failedCmd("list")
	if !strings.Contains(out, messageSource) {
		t.Errorf("failed list does not name the source %s:\n%s", messageSource, out)
	}
	_, families := p.scrape()
	if got := value(families, "cdc_relay_events_dead_total"); got != float64(len(bad)) {
		t.Errorf("cdc_relay_events_dead_total is %v, want %d", got, len(bad))
	}
	p.stop(30 * time.Second)
}

// checkParkedMessage requires the status table to hold the message of id
// (its WAL position) DEAD with a reason mentioning reason and value as the
// record value: the payload of an envelope that was read but refused (a
// retry to a corrected topic sends it), else the whole content.
func (e *env) checkParkedMessage(id, content, reason, value string) {
	e.t.Helper()
	var status, lastError string
	var got []byte
	err := e.conn.QueryRow(context.Background(),
		"SELECT status, last_error, record_value FROM outbox_delivery WHERE event_id = $1", id).Scan(&status, &lastError, &got)
	if err != nil {
		e.t.Errorf("message %s (%s): no row in the status table: %v", id, content, err)
		return
	}
	if status != "DEAD" || !strings.Contains(strings.ToLower(lastError), strings.ToLower(reason)) {
		e.t.Errorf("message %s (%s): %s, %q; want DEAD with a reason mentioning %q", id, content, status, lastError, reason)
	}
	if string(got) != value {
		e.t.Errorf("message %s (%s): the parked row's value is %q, want %q", id, content, got, value)
	}
}

// TestMalformedMessageHoldsItsKey: with per-key order (the default), an
// envelope parked DEAD that names its topic and key (headers that are not
// a JSON object) holds the later messages of that topic and key, WAITING
// behind it as a bad row's key's later rows do, while another key's
// message arrives; `failed skip` of the parked one releases them, in
// commit order. The later messages are emitted at once: a message parked
// by the stream holds its key from the moment it is read.
func TestMalformedMessageHoldsItsKey(t *testing.T) {
	parallel(t)
	e := newMessageEnv(t)
	p := e.startRelay(append(messageArgs, orderRelayArgs()...)...)
	topic := e.prefix + ".msg"
	head := emitRaw(t, e.conn, true, "outbox", fmt.Sprintf(`{"topic": %q, "key": "held", "headers": [1], "payload": "bad headers"}`, topic))
	emit(t, e.conn, topic, "held", `"after 1"`, nil, nil)
	emit(t, e.conn, topic, "free", `"free"`, nil, nil)
	emit(t, e.conn, topic, "held", `"after 2"`, nil, nil)
	assertValues(t, e.readN(topic, 1, 30*time.Second), []string{"free"})
	e.waitFor("the key's two later messages WAITING", 30*time.Second, func() bool { return e.statusCount("WAITING") == 2 })
	if n := len(e.readAll(topic)); n != 1 {
		t.Fatalf("%s holds %d records while the key is held, want only the other key's", topic, n)
	}

	var id int64
	if err := e.conn.QueryRow(context.Background(), "SELECT id FROM outbox_delivery WHERE event_id = $1", head).Scan(&id); err != nil {
		t.Fatalf("the parked message %s: %v", head, err)
	}
	e.failedCmd("skip", strconv.FormatInt(id, 10))
	var held []string
	for _, r := range e.readN(topic, 3, 30*time.Second) {
		if string(r.Key) == "held" {
			held = append(held, string(r.Value))
		}
	}
	if strings.Join(held, ",") != "after 1,after 2" {
		t.Fatalf("the held key's messages arrived as %q, want after 1, after 2", held)
	}
	checkOrderMetrics(p, map[string]float64{"waiting": 2})
	p.stop(30 * time.Second)
}

// TestMessageRefusedByKafkaDeliveredByThePoller: Kafka refuses a large
// message (kfake's produce hook; Apache Kafka's max.message.bytes on a
// topic of one partition): it is parked FAILED from the message source,
// its key's three later messages wait behind it and another key's arrives;
// once the cause is gone the poller delivers the four from the status
// table's copies (a message has no row to read again), in commit order,
// each with its id and its value.
func TestMessageRefusedByKafkaDeliveredByThePoller(t *testing.T) {
	parallel(t)
	e := newMessageEnv(t)
	topic, key := e.prefix+".msg", "refused-"+e.slot
	e.orderedTopic(topic)
	lift := e.refuseKey(topic, key)
	p := e.startRelay(append(messageArgs, orderRelayArgs()...)...)
	large := fmt.Sprintf(`{"pad": %q}`, strings.Repeat("x", headPad))
	emit(t, e.conn, topic, key, large, nil, "held-0")
	for i := 1; i <= 3; i++ {
		emit(t, e.conn, topic, key, fmt.Sprintf(`{"n": %d}`, i), nil, fmt.Sprintf("held-%d", i))
	}
	emit(t, e.conn, topic, "other", `{"n": 0}`, nil, "other")
	assertValues(t, e.readN(topic, 1, 30*time.Second), []string{e.jsonbText(`{"n": 0}`)})
	e.waitFor("the large message FAILED and the key's three later ones WAITING", 30*time.Second, func() bool {
		return e.statusCount("FAILED") == 1 && e.statusCount("WAITING") == 3
	})
	for _, r := range e.parkedMessages() {
		if r.SourceTable == nil || *r.SourceTable != messageSource {
			t.Errorf("parked row %d (%s) has source %s, want %s", r.ID, r.Status, optText(r.SourceTable), messageSource)
		}
	}

	lift()
	var ids []string
	for _, r := range e.readN(topic, 5, 60*time.Second) {
		if string(r.Key) != key {
			continue
		}
		ids = append(ids, header(r, "id"))
		if header(r, "id") == "held-0" && string(r.Value) != e.jsonbText(large) {
			t.Errorf("the large message arrived with a value of %d bytes, not the %d emitted", len(r.Value), len(e.jsonbText(large)))
		}
	}
	if strings.Join(ids, ",") != "held-0,held-1,held-2,held-3" {
		t.Fatalf("the key's messages arrived as %v, want held-0 … held-3 in commit order", ids)
	}
	e.waitFor("the four rows DELIVERED", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 4 })
	checkOrderMetrics(p, map[string]float64{"waiting": 3})
	p.stop(30 * time.Second)
}
