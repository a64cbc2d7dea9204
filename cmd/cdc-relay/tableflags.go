package main

import (
	"flag"
	"fmt"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay"
)

// tableFlags are the names the commands share: the outbox table, the
// relay's tables and the publication (which status, reading no
// publication, leaves out: registerTables, applyTables).
type tableFlags struct {
	table, statusTable, checkpointTable, publication string
}

// checkpointTableUsage is --checkpoint-table's help for the commands that
// keep or read the checkpoint.
const checkpointTableUsage = "the relay's checkpoint table, as `schema.table`: the confirmed position, saved so that a lost slot is noticed"

// register registers every name: the tables and --publication.
func (t *tableFlags) register(fs *flag.FlagSet) {
	t.registerTables(fs, checkpointTableUsage)
	fs.StringVar(&t.publication, "publication", "cdc_relay", "the `name` of the publication of the outbox table, which the slot streams")
}

// registerTables registers the tables' names, --checkpoint-table with
// checkpointUsage: what the command does with it.
func (t *tableFlags) registerTables(fs *flag.FlagSet, checkpointUsage string) {
	fs.StringVar(&t.table, "table", "public.outbox", "the outbox table, as `schema.table`; a name without a schema is in public")
	fs.StringVar(&t.statusTable, "status-table", "public.outbox_delivery",
		"the status table, as `schema.table`: it keeps a copy of each event the relay could not deliver, with the reason, until it is delivered or dealt with")
	fs.StringVar(&t.checkpointTable, "checkpoint-table", "public.cdc_relay_checkpoint", checkpointUsage)
}

// timestampUnitFlag is --timestamp-unit: s, ms or us.
type timestampUnitFlag decoder.TimestampUnit

func (u *timestampUnitFlag) String() string { return string(*u) }

func (u *timestampUnitFlag) Set(s string) error {
	unit, err := decoder.ParseTimestampUnit(s)
	if err != nil {
		return fmt.Errorf("want s, ms or us (epoch seconds, milliseconds or microseconds)")
	}
	*u = timestampUnitFlag(unit)
	return nil
}

// apply copies the names into cfg: the tables' (applyTables) and the
// publication.
func (t *tableFlags) apply(cfg *relay.Config) error {
	if err := t.applyTables(cfg); err != nil {
		return err
	}
	if t.publication == "" {
		return usageError{"--publication is empty: name the publication of the outbox table"}
	}
	cfg.Publication = t.publication
	return nil
}

// applyTables copies the tables' names into cfg.
func (t *tableFlags) applyTables(cfg *relay.Config) error {
	var err error
	if cfg.Tables[0].Mapping.Schema, cfg.Tables[0].Mapping.Table, err = decoder.ParseTable(t.table); err != nil {
		return usageError{fmt.Sprintf("--table %q: %v", t.table, err)}
	}
	if cfg.StatusSchema, cfg.StatusTable, err = decoder.ParseTable(t.statusTable); err != nil {
		return usageError{fmt.Sprintf("--status-table %q: %v", t.statusTable, err)}
	}
	if cfg.CheckpointSchema, cfg.CheckpointTable, err = decoder.ParseTable(t.checkpointTable); err != nil {
		return usageError{fmt.Sprintf("--checkpoint-table %q: %v", t.checkpointTable, err)}
	}
	return nil
}
