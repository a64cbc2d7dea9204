package replication

import (
	"strings"
	"testing"
)

func TestValidSlotName(t *testing.T) {
	const rule = "; PostgreSQL allows only lower-case letters, digits and underscores"
	tests := []struct {
		name string
		want string // the error; "" for a valid name
	}{
		{"cdc_relay", ""},
		{"slot_2", ""},
		{"0", ""},
		{strings.Repeat("s", 63), ""},
		{"", "the replication slot name is empty"},
		{strings.Repeat("s", 64), `replication slot name "` + strings.Repeat("s", 64) + `" is 64 bytes long; PostgreSQL allows at most 63`},
		{"MySlot", `replication slot name "MySlot" has 'M'` + rule + ` (use "myslot")`},
		{"my-slot", `replication slot name "my-slot" has '-'` + rule},
		{"My-Slot", `replication slot name "My-Slot" has 'M'` + rule}, // no suggestion: my-slot is not valid either
		{"my slot", `replication slot name "my slot" has ' '` + rule},
		{"slot;drop", `replication slot name "slot;drop" has ';'` + rule},
		{"slöt", `replication slot name "slöt" has 'ö'` + rule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := ValidSlotName(tt.name); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("ValidSlotName(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestPublicationNamesOption(t *testing.T) {
	for in, want := range map[string]string{
		"cdc_relay":  `publication_names '"cdc_relay"'`,
		"MyPub":      `publication_names '"MyPub"'`,
		"a,b":        `publication_names '"a,b"'`,
		`My "Pub"`:   `publication_names '"My ""Pub"""'`,
		`it's`:       `publication_names '"it''s"'`,
		`'"; DROP x`: `publication_names '"''""; DROP x"'`,
	} {
		if got := publicationNamesOption(in); got != want {
			t.Errorf("publicationNamesOption(%q) = %s, want %s", in, got, want)
		}
	}
}
