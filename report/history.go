package report

import (
	"sync"
	"time"
)

// A relay's history: its counters read every HistoryInterval, the last
// HistorySize readings kept in memory, for the console's last hour. It
// starts empty at each start of the process.
const (
	HistoryInterval = 10 * time.Second
	HistorySize     = 360 // an hour
)

// Sample is one reading of a relay's counters, each counted since the
// process started.
type Sample struct {
	At time.Time
	// Produced is Status.EventsProduced.
	Produced uint64
	// AckSeconds and Acked are the sum and the count of the commit-to-ack
	// times of the events the stream delivered (the
	// cdc_relay_commit_to_ack_seconds histogram's).
	AckSeconds float64
	Acked      uint64
}

// History keeps the last readings of a relay's counters in a ring of a
// fixed size: it never holds more than that. It is safe for concurrent
// use.
type History struct {
	mu   sync.Mutex
	ring []Sample
	next int // where the next reading goes
	full bool
}

// NewHistory returns an empty history that keeps the last size readings
// (at least 2).
func NewHistory(size int) *History {
	return &History{ring: make([]Sample, max(size, 2))}
}

// Add keeps s, dropping the oldest reading when the ring is full.
func (h *History) Add(s Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring[h.next] = s
	h.next = (h.next + 1) % len(h.ring)
	h.full = h.full || h.next == 0
}

// Samples returns a copy of the readings kept, oldest first.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]Sample(nil), h.ring[:h.next]...)
	}
	return append(append([]Sample(nil), h.ring[h.next:]...), h.ring[:h.next]...)
}

// Point is what the relay did between two readings.
type Point struct {
	// At is the end of the interval, and Seconds its length.
	At      time.Time `json:"at"`
	Seconds float64   `json:"seconds"`
	// Rate is the events produced a second.
	Rate float64 `json:"rate"`
	// MeanAckSeconds is the mean commit-to-ack time of the events
	// delivered in the interval; Acked counts them (0: no mean).
	MeanAckSeconds float64 `json:"mean_ack_seconds"`
	Acked          uint64  `json:"acked"`
}

// Points are the intervals between consecutive readings, oldest first: one
// fewer than the readings. A counter that went back (never, within one
// process) counts 0.
func Points(samples []Sample) []Point {
	var out []Point
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		secs := b.At.Sub(a.At).Seconds()
		if secs <= 0 {
			continue
		}
		p := Point{At: b.At, Seconds: secs}
		if b.Produced >= a.Produced {
			p.Rate = float64(b.Produced-a.Produced) / secs
		}
		if b.Acked > a.Acked && b.AckSeconds >= a.AckSeconds {
			p.Acked = b.Acked - a.Acked
			p.MeanAckSeconds = (b.AckSeconds - a.AckSeconds) / float64(p.Acked)
		}
		out = append(out, p)
	}
	return out
}
