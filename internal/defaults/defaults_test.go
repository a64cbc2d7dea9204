package defaults

import (
	"log/slog"
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	tests := []struct {
		name      string
		v, d, out time.Duration
	}{
		{"zero takes the default", 0, time.Second, time.Second},
		{"negative takes the default", -time.Millisecond, time.Second, time.Second},
		{"set is kept", 5 * time.Millisecond, time.Second, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.v
			Positive(&v, tt.d)
			if v != tt.out {
				t.Fatalf("got %v, want %v", v, tt.out)
			}
		})
	}
	n, f := -1, 0.0
	Positive(&n, 100)
	Positive(&f, 0.5)
	if n != 100 || f != 0.5 {
		t.Fatalf("int %d, float %v: want 100 and 0.5", n, f)
	}
}

func TestZero(t *testing.T) {
	tests := []struct{ v, d, out string }{
		{"", "cdc-relay.slot", "cdc-relay.slot"},
		{"mine", "cdc-relay.slot", "mine"},
	}
	for _, tt := range tests {
		v := tt.v
		Zero(&v, tt.d)
		if v != tt.out {
			t.Errorf("Zero(%q, %q) = %q, want %q", tt.v, tt.d, v, tt.out)
		}
	}
}

func TestLogger(t *testing.T) {
	var l *slog.Logger
	Logger(&l)
	if l == nil {
		t.Fatal("nil logger left nil")
	}
	l.Info("discarded") // must not panic
	mine := slog.Default()
	l = mine
	Logger(&l)
	if l != mine {
		t.Fatal("a set logger was replaced")
	}
}
