package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/relay"
)

// MigrateCommand is `cdc-relay migrate`: prepare a database.
type MigrateCommand struct {
	stdout, stderr io.Writer

	postgresURL string
	tables      tableFlags
	skipOutbox  bool
}

const migrateUsage = `Usage: cdc-relay migrate [flags]

Prepares a database for the relay. Safe to run again: it applies only what is
missing.

  - checks wal_level = logical, and says how to fix it when it is not;
  - creates the status table and the checkpoint table (versioned migrations
    embedded in the binary, recorded in cdc_relay_schema_migrations);
  - creates the outbox table with the default layout if it does not exist
    (id uuid, aggregate_type, aggregate_id, event_type, topic, payload jsonb,
    headers jsonb, created_at timestamptz);
  - creates the publication FOR TABLE <outbox> WITH (publish = 'insert',
    publish_via_partition_root = true), or adds the outbox table to an
    existing publication (for a partitioned outbox, one that publishes via
    the root: it says how to set that).

Pass "cdc-relay run" the same table and publication flags.

Example:

  cdc-relay migrate --postgres-url postgres://admin:secret@db:5432/app
`

// migrateSections orders migrate's flags in its usage.
var migrateSections = []flagSection{
	{"Connection (required)", []string{"postgres-url"}},
	{"Tables", []string{"table", "skip-outbox", "status-table", "checkpoint-table", "publication"}},
}

func (c *MigrateCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.StringVar(&c.postgresURL, "postgres-url", "",
		"PostgreSQL connection `URL`, such as postgres://admin:secret@db:5432/app; the role needs CREATE on the schemas")
	c.tables.register(fs)
	fs.BoolVar(&c.skipOutbox, "skip-outbox", false, "do not create the outbox table: map an existing one with run's column flags")
	return fs
}

// Usage writes migrate's help.
func (c *MigrateCommand) Usage(w io.Writer) {
	printUsage(w, c.flags(), migrateUsage, migrateSections)
}

// Run parses args and migrates.
func (c *MigrateCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.postgresURL == "" {
		return usageError{"--postgres-url (or CDC_RELAY_POSTGRES_URL) is required"}
	}
	var rc relay.Config
	if err := c.tables.apply(&rc); err != nil {
		return err
	}
	res, err := Migrate(ctx, c.postgresURL, rc, c.skipOutbox)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "migrated %s: applied %d migration(s)", redactURL(c.postgresURL), len(res.Applied))
	if res.CreatedOutbox {
		fmt.Fprintf(c.stdout, ", created table %s.%s", rc.Mapping.Schema, rc.Mapping.Table)
	}
	switch {
	case res.CreatedPublication:
		fmt.Fprintf(c.stdout, ", created publication %q", rc.Publication)
	case res.AddedToPublication:
		fmt.Fprintf(c.stdout, ", added %s.%s to publication %q", rc.Mapping.Schema, rc.Mapping.Table, rc.Publication)
	}
	fmt.Fprintln(c.stdout)
	return nil
}

// Migrate applies the migrations for a relay configuration.
func Migrate(ctx context.Context, postgresURL string, rc relay.Config, skipOutbox bool) (migrations.Result, error) {
	cfg, err := pgx.ParseConfig(postgresURL)
	if err != nil {
		return migrations.Result{}, fmt.Errorf("parse PostgreSQL URL: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return migrations.Result{}, pgerr.Connect(&cfg.Config, err, "")
	}
	defer conn.Close(context.Background())
	tables := rc.Tables()
	tables.SkipOutbox = skipOutbox
	return migrations.Apply(ctx, conn, tables)
}
