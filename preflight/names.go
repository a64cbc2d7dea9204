package preflight

import "github.com/cdc-relay/cdc-relay/migrations"

// Names are what the table checks need beyond a table's config: the
// relay's objects they look for, and the config file, for the messages
// that say what to run.
type Names struct {
	// Publication must include each table.
	Publication string
	// StatusSchema and StatusTable name the relay's status table: the
	// reset trigger of a table with pending values calls the trigger
	// function beside it.
	StatusSchema, StatusTable string
	// ConfigPath is the config file's path, as `--config` takes it.
	ConfigPath string
}

// migrations is the migrations.Config of outbox table schema.table under
// these names, with the reset trigger r.
func (n Names) migrations(schema, table string, r migrations.Reset) migrations.Config {
	return migrations.Config{OutboxSchema: schema, OutboxTable: table, StatusSchema: n.StatusSchema, StatusTable: n.StatusTable,
		Publication: n.Publication, Reset: r}
}
