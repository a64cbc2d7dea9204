package webhook

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSend sends to a local receiver over keep-alive, one event a
// request and batches of 10, and reports the events a second and the
// allocations of a request.
func BenchmarkSend(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	payload := []byte(`{"wallet_id":"w-1842","amount":{"value":"125.00","currency":"EUR"},"kind":"credited","at":"2026-01-02T03:04:05Z"}`)
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			cfg := testConfig(srv.URL + "/hooks")
			cfg.BatchSize = batch
			s := newSender(b, cfg)
			msgs := make([]Message, batch)
			for i := range msgs {
				msgs[i] = Message{ID: strconv.Itoa(1000 + i), Time: time.Now(), Payload: payload,
					Headers: []Header{{"id", []byte(strconv.Itoa(1000 + i))}, {"aggregate_type", []byte("wallet")}}}
			}
			b.ReportAllocs()
			for b.Loop() {
				if r := s.Send(context.Background(), msgs); r.Outcome != Delivered {
					b.Fatalf("result %+v", r)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
