package decoder

import (
	"fmt"
	"hash/maphash"
	"strings"
	"testing"
	"unsafe"
)

// TestTopicCacheSmallerThanTheTopics: with room for 2 names and 5 topics in
// use, in several orders, every event still gets its own topic and the
// verdict on its name (a legal name, one with an illegal character, one
// --allowed-topics refuses), and the cache never holds more than 2 names.
func TestTopicCacheSmallerThanTheTopics(t *testing.T) {
	type topic struct {
		agg    string // aggregate_type: the template renders outbox.event.<agg>
		column string // the topic column, overriding the template when set
		poison string // what the reason must say; "" for a usable topic
	}
	topics := []topic{
		{agg: "order"},
		{agg: "inventory-reservation-line-item"}, // over 32 bytes rendered
		{agg: "bad topic!", poison: `"outbox.event.bad topic!" has illegal character`},
		{column: "_schemas", poison: `topic "_schemas" is not allowed`},
		{column: "payments"},
	}
	orders := map[string][]int{
		"round robin":  {0, 1, 2, 3, 4, 0, 1, 2, 3, 4},
		"runs":         {0, 0, 2, 2, 2, 3, 3, 0, 0, 4, 4, 1, 1},
		"reversed":     {4, 3, 2, 1, 0, 4, 3, 2, 1, 0},
		"two and back": {0, 2, 0, 3, 0, 4, 0, 1, 2, 0},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			d, err := newDecoder([]Mapping{DefaultMapping()}, 2)
			if err != nil {
				t.Fatal(err)
			}
			mustDecode(t, d, relationMsg(1, "public", "outbox", outboxCols))
			for n, i := range order {
				tp := topics[i]
				want, col := "outbox.event."+tp.agg, (*string)(nil)
				if tp.column != "" {
					want, col = tp.column, s(tp.column)
				}
				m := mustDecode(t, d, insertMsg(1, s("id"), s(tp.agg), s("k"), s("E"), col, s(`{}`), nil, nil))
				if m.Event.Topic != want {
					t.Fatalf("event %d: topic %q, want %q", n, m.Event.Topic, want)
				}
				switch {
				case tp.poison == "" && m.Poison != nil:
					t.Fatalf("event %d: topic %q refused: %v", n, want, m.Poison)
				case tp.poison != "" && (m.Poison == nil || !strings.Contains(m.Poison.Error(), tp.poison)):
					t.Fatalf("event %d: poison %v, want one saying %s", n, m.Poison, tp.poison)
				}
				if l := d.tables[0].topics.lru.Len(); l > 2 {
					t.Fatalf("event %d: %d names cached, want at most 2", n, l)
				}
			}
		})
	}
}

// TestTopicCacheInterns: a cached name is the same string each time (one
// allocation, however many events), also for a name that is not the last
// looked up.
func TestTopicCacheInterns(t *testing.T) {
	c := newTopicCache(8, ValidTopic)
	a := []byte("outbox.event.inventory-reservation-line-item")
	first, _ := c.get(a)
	c.get([]byte("other"))
	again, _ := c.get(a)
	if again != string(a) || unsafe.StringData(again) != unsafe.StringData(first) {
		t.Fatalf("second lookup of %q gave a new string", a)
	}
}

// TestTopicCacheDoesNotAllocate: looking up cached names allocates nothing,
// also for names over 32 bytes (the longest a string conversion can build
// on the stack) that alternate, so the last-name fast path misses.
func TestTopicCacheDoesNotAllocate(t *testing.T) {
	c := newTopicCache(8, ValidTopic)
	names := [][]byte{
		[]byte("outbox.event.inventory-reservation-line-item"),
		[]byte("outbox.event.payment-authorization-hold"),
		[]byte("short"),
	}
	for _, b := range names {
		c.get(b)
	}
	i := 0
	if allocs := testing.AllocsPerRun(1000, func() {
		c.get(names[i%len(names)])
		i++
	}); allocs != 0 {
		t.Fatalf("%v allocations per lookup of a cached name, want 0", allocs)
	}
}

// TestTopicCacheHashCollision: two names with the same hash are both looked
// up right; each replaces the other in the cache.
func TestTopicCacheHashCollision(t *testing.T) {
	checked := map[string]int{}
	c := newTopicCache(8, func(name string) error {
		checked[name]++
		return fmt.Errorf("checked %s", name)
	})
	// "b" cached under the hash of "a": what a collision leaves.
	c.lru.Add(maphash.Bytes(c.seed, []byte("a")), topicEntry{name: "b", err: fmt.Errorf("checked b")})
	for _, name := range []string{"a", "b", "a", "b"} {
		got, err := c.get([]byte(name))
		if got != name || err == nil || err.Error() != "checked "+name {
			t.Fatalf("get(%q) = %q, %v; want %q, checked %s", name, got, err, name, name)
		}
	}
	if checked["a"] != 1 || checked["b"] != 1 {
		t.Fatalf("names checked %v; want each once (the entry the collision left is replaced, not taken for a)", checked)
	}
}

// TestTopicCacheKeepsNoLongName: a name longer than Kafka allows (a topic
// column of a megabyte) is refused and not kept, so the cache stays small
// in bytes, not only in names.
func TestTopicCacheKeepsNoLongName(t *testing.T) {
	c := newTopicCache(8, ValidTopic)
	for _, n := range []int{maxTopicLen + 1, 1 << 20} {
		long := strings.Repeat("a", n)
		for i := 0; i < 2; i++ {
			got, err := c.get([]byte(long))
			if got != long || err == nil || !strings.Contains(err.Error(), "longer than Kafka allows") {
				t.Fatalf("get(%d bytes) = %d bytes, %v; want the name, refused as too long", n, len(got), err)
			}
		}
	}
	if c.lru.Len() != 0 || c.last.name != "" {
		t.Fatalf("%d names cached, last %.20q; want none", c.lru.Len(), c.last.name)
	}
	if got, err := c.get([]byte(strings.Repeat("a", maxTopicLen))); err != nil || c.lru.Len() != 1 {
		t.Fatalf("get(%d bytes) = %v, %d names cached; want it allowed and kept", len(got), err, c.lru.Len())
	}
}

// TestReservedTopicsRefused: the relay's own topics and Kafka's "__"
// topics are refused whatever AllowedTopics allows.
func TestReservedTopicsRefused(t *testing.T) {
	for _, allowed := range []string{"", ".*"} {
		check, err := Mapping{AllowedTopics: allowed, ReservedTopics: []string{"cdc-relay.checkpoints", "dead"}}.TopicCheck()
		if err != nil {
			t.Fatal(err)
		}
		for _, topic := range []string{"cdc-relay.checkpoints", "dead", "__consumer_offsets", "__transaction_state"} {
			if err := check(topic); err == nil {
				t.Errorf("allowed %q: topic %q passes; want it refused", allowed, topic)
			}
		}
		if err := check("orders"); err != nil {
			t.Errorf("allowed %q: orders refused: %v", allowed, err)
		}
	}
	m := MessageMapping{Prefix: "p", PayloadOnly: true, Topic: "dead", ReservedTopics: []string{"dead"}}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "relay's own") {
		t.Errorf("a message source whose topic is the dead-letter topic: %v; want it refused", err)
	}
}
