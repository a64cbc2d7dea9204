package decoder

import (
	"strings"
	"testing"
)

// BenchmarkDecodeInsert decodes one INSERT of the default outbox table with
// a ~300-byte payload: the decoder's share of the per-event hot path.
func BenchmarkDecodeInsert(b *testing.B) {
	d := benchDecoder(b)
	msg := benchInsert("order")
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := d.Decode(msg)
		if err != nil || m.Kind != KindEvent {
			b.Fatal(m.Kind, err)
		}
	}
}

// BenchmarkDecodeInsertTopics is BenchmarkDecodeInsert with consecutive
// events for different topics, as an outbox of several aggregate types
// sends them: each event's topic differs from the last one's, and half of
// the names are longer than 32 bytes (the most a string conversion that
// does not escape can build on the stack). The topic cache still serves
// every lookup without an allocation.
func BenchmarkDecodeInsertTopics(b *testing.B) {
	d := benchDecoder(b)
	var msgs [][]byte
	for _, agg := range []string{"order", "payment", "shipment", "customer",
		"order-line-item-reservation", "payment-authorization-hold", "shipment-tracking-update", "customer-loyalty-points"} {
		msgs = append(msgs, benchInsert(agg))
	}
	b.SetBytes(int64(len(msgs[0])))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := d.Decode(msgs[i%len(msgs)])
		if err != nil || m.Kind != KindEvent || m.Poison != nil {
			b.Fatal(m.Kind, err, m.Poison)
		}
	}
}

// benchDecoder is a decoder of the default mapping that has seen the
// default outbox table's Relation message.
func benchDecoder(b *testing.B) *Decoder {
	d, err := New(DefaultMapping())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Decode(relationMsg(1, "public", "outbox", outboxCols)); err != nil {
		b.Fatal(err)
	}
	return d
}

// benchInsert is an INSERT into the default outbox table of an event of
// aggregate type aggregate, with a ~300-byte payload.
func benchInsert(aggregate string) []byte {
	payload := `{"order_id": "o-12345", "pad": "` + strings.Repeat("x", 260) + `"}`
	return insertMsg(1, s("5f0c1a5e-9d4b-4c1e-8f3a-2b6d7e8f9a0b"), s(aggregate), s("key-42"), s("OrderPlaced"),
		nil, s(payload), nil, s("2026-11-22 16:59:15.123456+00"))
}

// BenchmarkDecodeMessage decodes one logical decoding message whose
// content is an envelope, as cdc_relay.emit writes it, with the payload of
// BenchmarkDecodeInsert: a message's share of the per-event hot path.
func BenchmarkDecodeMessage(b *testing.B) {
	d, err := NewSources(nil, []MessageMapping{{Prefix: DefaultMessagePrefix}})
	if err != nil {
		b.Fatal(err)
	}
	payload := `{"pad": "` + strings.Repeat("x", 260) + `", "order_id": "o-12345"}`
	msg := logicalMsg(true, 0x16B3748, DefaultMessagePrefix,
		`{"id": null, "key": "key-42", "topic": "outbox.event.order", "headers": null, "payload": `+payload+`}`)
	if _, err := d.Decode(beginMsg(0x16B3800)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := d.Decode(msg)
		if err != nil || m.Kind != KindEvent || m.Poison != nil {
			b.Fatal(m.Kind, err, m.Poison)
		}
	}
}
