package checkpoint

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// pg is the package's PostgreSQL: each test's database is a copy of one
// with an outbox table and the checkpoint table `migrate` creates
// (migrations.DefaultConfig, SkipOutbox).
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{Template: migrated})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// migrated makes the template: an outbox table and the checkpoint table.
func migrated(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "CREATE TABLE outbox (id uuid)"); err != nil {
		return err
	}
	if _, err := migrations.Apply(ctx, conn, migratedConfig()); err != nil {
		return fmt.Errorf("migrations.Apply: %w", err)
	}
	return nil
}

// migratedConfig is the configuration the template was migrated with.
func migratedConfig() migrations.Config {
	cfg := migrations.DefaultConfig()
	cfg.SkipOutbox = true
	return cfg
}
