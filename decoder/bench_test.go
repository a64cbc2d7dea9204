package decoder

import (
	"strings"
	"testing"
)

// BenchmarkDecodeInsert decodes one INSERT of the default outbox table with
// a ~300-byte payload: the decoder's share of the per-event hot path.
func BenchmarkDecodeInsert(b *testing.B) {
	d, err := New(DefaultMapping())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Decode(relationMsg(1, "public", "outbox", outboxCols)); err != nil {
		b.Fatal(err)
	}
	payload := `{"order_id": "o-12345", "pad": "` + strings.Repeat("x", 260) + `"}`
	msg := insertMsg(1, s("5f0c1a5e-9d4b-4c1e-8f3a-2b6d7e8f9a0b"), s("order"), s("key-42"), s("OrderPlaced"),
		nil, s(payload), nil, s("2026-11-22 16:59:15.123456+00"))
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := d.Decode(msg)
		if err != nil || m.Kind != KindEvent {
			b.Fatal(m.Kind, err)
		}
	}
}
