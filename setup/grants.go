package setup

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// Grants returns the SQL of `cdc-relay migrate --print-grants role`: what
// [migrations.Grants] grants for the relay's tables and the first outbox
// table (DELETE on it only when rc.DeleteOutbox: the
// relay deletes rows of no other table, and of a config file's tables only
// when run is given --retention), then USAGE on the schema of every other
// outbox table and SELECT on it, and UPDATE on the columns each table's
// write-back sets; for a table whose write-back lists pending values, a
// comment that migrate must run as the table's owner (the relay's role
// needs nothing more). Every name is quoted wherever it stands, so that
// no name, whatever it holds, runs a statement of its own when the SQL is
// piped to psql. For a table with an adopt predicate (its own or a
// route's), a comment says that the first run, when it creates the slot,
// runs the predicate as this role,
// which needs SELECT on the tables it reads (SQL the relay does not parse).
// A table with a progress table grants SELECT, INSERT and UPDATE on it.
// With no table (a relay of messages only) it grants the relay's tables
// alone. With message sources, comments say that the relay's role needs
// nothing more for them, and which grant an application's role needs to
// call cdc_relay.emit (commented out: the application's role is not
// this one).
func Grants(rc Config, role string) string {
	var b strings.Builder
	first := ownTables(rc)
	if len(rc.Tables) > 0 {
		first = rc.migrations(0)
	}
	b.WriteString(migrations.Grants(first, role, rc.DeleteOutbox))
	r := pgx.Identifier{role}.Sanitize()
	if len(rc.Messages) > 0 {
		b.WriteString(messagesComment(r))
	}
	for i, t := range rc.Tables {
		table := pgx.Identifier{t.Mapping.Schema, t.Mapping.Table}.Sanitize()
		if i > 0 {
			fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s;\n", pgx.Identifier{t.Mapping.Schema}.Sanitize(), r)
			fmt.Fprintf(&b, "GRANT SELECT ON %s TO %s;\n", table, r)
		}
		if t.Adopts() {
			b.WriteString(adoptComment(table, r))
		}
		if pt := t.Progress; pt != nil {
			b.WriteString(migrations.Comment(fmt.Sprintf("progress: of %s: the relay keeps its rows of the progress table true.", table)))
			fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s;\n", pgx.Identifier{pt.Schema}.Sanitize(), r)
			fmt.Fprintf(&b, "GRANT SELECT, INSERT, UPDATE ON %s TO %s;\n", pt.QuotedName(), r)
		}
		if wb := t.WriteBack; wb != nil {
			var cols []string
			for _, c := range wb.WrittenColumns() {
				cols = append(cols, pgx.Identifier{c.Name}.Sanitize())
			}
			b.WriteString(migrations.Comment(fmt.Sprintf("Write-back of %s: the outcome of each event into its row.", table)))
			fmt.Fprintf(&b, "GRANT UPDATE (%s) ON %s TO %s;\n", strings.Join(cols, ", "), table, r)
			if len(wb.Pending) > 0 {
				b.WriteString(migrations.Comment(fmt.Sprintf("%s lists pending values: `cdc-relay migrate` keeps its reset trigger, so it must run as a role "+
					"that may create triggers on the table (its owner). This role needs nothing for it: the trigger function runs as its owner.", table)))
			}
		}
	}
	return b.String()
}

// adoptComment says, for the outbox table named table with an adopt
// predicate, which privileges role r needs when the first run adopts: the
// predicate is SQL the relay does not parse, so the tables it reads are
// not named.
func adoptComment(table, r string) string {
	return migrations.Comment(fmt.Sprintf("adopt: of %s: when the first run creates the slot (migrate did not), it runs the predicate as this role, "+
		"which then needs SELECT on the tables your adopt: predicate reads besides this one (a progress table, say): GRANT SELECT ON <table> TO %s;", table, r))
}

// messagesComment says, for the quoted role r of a relay with message
// sources, that reading the messages needs nothing beyond REPLICATION,
// and gives, commented out, the grant an application's role needs to
// call the SQL helper (EXECUTE on it is PUBLIC's).
func messagesComment(r string) string {
	return migrations.Comment(fmt.Sprintf("Messages: %s needs nothing more for them (they come on the replication connection, "+
		"whatever the publication holds). An application's role that calls cdc_relay.emit needs:", r)) +
		"-- GRANT USAGE ON SCHEMA cdc_relay TO <application role>;\n"
}
