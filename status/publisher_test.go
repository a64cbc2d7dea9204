package status

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestValidPublisher: a publisher's name is a lowercase letter, then at
// most 62 lowercase letters, digits, _ and -; Publisher refuses
// any other, before a statement could hold it.
func TestValidPublisher(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{KafkaPublisher, true}, {"partner", true}, {"p", true}, {"web_hook_2", true}, {"a" + strings.Repeat("b", 62), true},
		{"", false}, {"a" + strings.Repeat("b", 63), false}, {"Partner", false}, {"2nd", false}, {"_p", false},
		{"web-hook", true}, {"-p", false}, {"p'; DROP TABLE x; --", false}, {"pärtner", false}, {"p q", false},
	} {
		err := ValidPublisher(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidPublisher(%q) = %v, want valid %v", tt.name, err, tt.ok)
		}
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			Publisher(tt.name)
			return false
		}()
		if panicked == tt.ok {
			t.Errorf("Publisher(%q) panicked %v, want %v", tt.name, panicked, !tt.ok)
		}
	}
	if s := NewStore(nil, "public", "outbox_delivery"); s.Publisher() != KafkaPublisher {
		t.Errorf("a store's publisher without Publisher: %q, want %q", s.Publisher(), KafkaPublisher)
	}
}

// TestPausedByIsTheStores: the topics a team pauses in its own table
// (PausedBy) are paused for the store given the select, whichever its
// publisher; a store given none lists only its pause table's topics.
func TestPausedByIsTheStores(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	for _, tt := range []struct {
		publisher string
		selects   []string
		want      []string
	}{
		{KafkaPublisher, []string{"SELECT '" + teamPaused + "'::text"}, []string{"orders", teamPaused}},
		{partner, []string{"SELECT 'partner-paused'::text"}, []string{"orders", "partner-paused"}},
		{"analytics", nil, []string{"orders"}},
	} {
		s := NewStore(db.conn, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s"),
			PausedBy(tt.selects...), Publisher(tt.publisher))
		if _, err := s.PauseTopic(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.PausedTopics(ctx); err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("PausedTopics of %s's store: %v, %v; want %v", tt.publisher, got, err, tt.want)
		}
	}
}

// TestRowsCarryTheirPublisher: List, Get and a claim's rows say whose
// they are; a row's JSON names a publisher only when it is not Kafka's.
func TestRowsCarryTheirPublisher(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	for i, p := range []string{KafkaPublisher, partner} {
		s := NewStore(db.conn, "public", "outbox_delivery", Publisher(p))
		if err := s.Failed(ctx, guardEvent(0), errors.New("refused")); err != nil {
			t.Fatal(err)
		}
		listed, err := s.List(ctx, ListOptions{})
		if err != nil || len(listed) != 1 || listed[0].Publisher != p {
			t.Fatalf("List of %s's store: %+v, %v; want its one row", p, listed, err)
		}
		got, err := s.Get(ctx, listed[0].ID)
		if err != nil || got.Publisher != p {
			t.Errorf("Get of %s's row: %q, %v", p, got.Publisher, err)
		}
		var claimed []string
		if _, err := s.Claim(ctx, 10, func(_ context.Context, rows []Row) []Outcome {
			for _, r := range rows {
				claimed = append(claimed, r.Publisher)
			}
			return nil
		}); err != nil || !slices.Equal(claimed, []string{p}) {
			t.Errorf("claim of %s's store: rows of %v, %v", p, claimed, err)
		}
		js, err := got.MarshalJSON()
		if named := strings.Contains(string(js), `"publisher"`); err != nil || named != (i == 1) {
			t.Errorf("JSON of %s's row names a publisher %v (%v), want %v:\n%s", p, named, err, i == 1, js)
		}
	}
}
