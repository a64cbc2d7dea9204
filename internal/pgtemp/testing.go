package pgtemp

import (
	"context"
	"os"
	"testing"
	"time"
)

// StartT starts a cluster for a test and stops it when the test ends. It
// skips the test when PostgreSQL's server binaries are missing, except in
// CI (CI set), where a missing PostgreSQL is a failure.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if _, err := FindBin(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}
