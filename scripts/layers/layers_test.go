package main

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const text = `
internal/...      # helpers
decoder sink      # one layer
relay
cmd/...
`
	r, err := parseRule(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		imports map[string][]string
		want    []string // a substring of each problem, in order
	}{
		{name: "every arrow down", imports: map[string][]string{
			"relay": {"decoder", "sink", "internal/pgerr"}, "sink": {"internal/pgerr"}, "cmd/cdc-relay": {"relay"}}},
		{name: "within one tree", imports: map[string][]string{
			"internal/pgconnect": {"internal/pgerr"}, "internal/pgerr": nil}},
		{name: "an arrow up", imports: map[string][]string{"decoder": {"relay"}, "relay": nil},
			want: []string{"decoder imports relay, which stands above it (decoder: line 3, relay: line 4"}},
		{name: "an arrow within a layer", imports: map[string][]string{"sink": {"decoder"}, "decoder": nil},
			want: []string{"sink imports decoder, which stands on its own layer"}},
		{name: "a tree's member up", imports: map[string][]string{"internal/x": {"decoder"}, "decoder": nil},
			want: []string{"internal/x imports decoder, which stands above it (internal/...: line 2"}},
		{name: "a package on no layer", imports: map[string][]string{"slot": {"decoder"}, "relay": {"slot"}},
			want: []string{"slot is on no layer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.check(tc.imports)
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestParseRuleRefusesAPackageTwice(t *testing.T) {
	_, err := parseRule("decoder\nsink decoder\n")
	if err == nil || !strings.Contains(err.Error(), "line 2: decoder is already on line 1") {
		t.Fatalf("err = %v", err)
	}
}
