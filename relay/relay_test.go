package relay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
)

// TestRunReturnsStartupErrors: an error while Run sets up what outlives a
// session is returned, with what it has started stopped again, not a
// panic.
func TestRunReturnsStartupErrors(t *testing.T) {
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		url  string
		want string
	}{
		{"PostgreSQL refuses the connection", fmt.Sprintf("postgres://relay:secret@127.0.0.1:%d/app?connect_timeout=5", port), "connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.PostgresURL = tt.url
			cfg.Kafka.Brokers = []string{"127.0.0.1:1"}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := Run(ctx, cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: %v, want an error with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
