// Package pgtemptest starts a throwaway PostgreSQL cluster (package pgtemp)
// for a test. Only tests import it, so the cdc-relay binary, which uses
// pgtemp for `cdc-relay demo`, does not link package testing.
package pgtemptest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

// StartT starts a cluster for a test and stops it when the test ends. It
// skips the test when PostgreSQL's server binaries are missing, except in
// CI (CI set), where a missing PostgreSQL is a failure.
func StartT(t testing.TB, opts pgtemp.Options) *pgtemp.Cluster {
	t.Helper()
	if _, err := pgtemp.FindBin(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgtemp.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}
