package migrations

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Grants returns the SQL, for an administrator to pipe to psql after
// migrate, that creates role with the least the relay needs for cfg's
// tables: LOGIN and REPLICATION (the replication connection, and creating
// the slot), USAGE on the tables' schemas, SELECT on the outbox table (the
// relay reads the WAL, but `recover` reads the table), DELETE on it only
// when retention deletes its rows (deletes), and writing the status table
// (with its id sequence), the checkpoint table, the table of paused
// topics, and SELECT on the table of backfills (the relay only reads it;
// comments say what a role that runs `cdc-relay backfill` needs besides:
// TEMPORARY on the database, INSERT and UPDATE on that table, SELECT on
// what its predicate reads). With no outbox table (cfg.HasOutbox false)
// it grants nothing on one, and deletes is ignored. It grants nothing on
// the publication: streaming needs no privilege on it, nor on the logical
// decoding messages it carries. It sets no password: a comment says how
// to set one, and that pg_hba.conf needs an ordinary line for the role and database
// (logical replication connections match those, not the `replication`
// keyword). An existing role gets the attributes and grants without being
// created again.
//
// Every name is quoted wherever it stands (identifiers, literals, DO
// bodies, comments), so that no name, whatever it holds, runs a statement
// of its own when the SQL is piped to psql.
func Grants(cfg Config, role string, deletes bool) string {
	r := pgx.Identifier{role}.Sanitize()
	outbox := pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize()
	status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
	checkpoint := pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize()
	var b strings.Builder
	writeGrantsHeading(&b, r)
	b.WriteString(doBlock(fmt.Sprintf("  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = %s) THEN\n    CREATE ROLE %s;\n  END IF;",
		pgdb.QuoteLiteral(role), r)))
	fmt.Fprintf(&b, "ALTER ROLE %s WITH LOGIN REPLICATION;\n", r)
	schemas := []string{cfg.StatusSchema, cfg.CheckpointSchema}
	if cfg.HasOutbox() {
		schemas = append([]string{cfg.OutboxSchema}, schemas...)
	}
	seen := map[string]bool{}
	for _, schema := range schemas {
		if !seen[schema] {
			seen[schema] = true
			fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s;\n", pgx.Identifier{schema}.Sanitize(), r)
		}
	}
	if cfg.HasOutbox() {
		writeOutboxGrant(&b, outbox, r, deletes)
	}
	fmt.Fprintf(&b, "-- The relay's own tables.\n")
	fmt.Fprintf(&b, "GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %s;\n", status, r)
	b.WriteString(doBlock(fmt.Sprintf("  EXECUTE format('GRANT USAGE ON SEQUENCE %%s TO %%I', pg_get_serial_sequence(%s, 'id'), %s);",
		pgdb.QuoteLiteral(status), pgdb.QuoteLiteral(role))))
	fmt.Fprintf(&b, "GRANT SELECT, INSERT, UPDATE ON %s TO %s;\n", checkpoint, r)
	fmt.Fprintf(&b, "-- The topics paused with `cdc-relay pause --topic`.\n")
	fmt.Fprintf(&b, "GRANT SELECT, INSERT, DELETE ON %s TO %s;\n", PauseTableName(cfg), r)
	fmt.Fprintf(&b, "-- The backfills, which the relay and `cdc-relay status` read to show the running ones.\n")
	fmt.Fprintf(&b, "GRANT SELECT ON %s TO %s;\n", BackfillTableName(cfg), r)
	writeBackfillComment(&b, cfg, r)
	return b.String()
}

// writeBackfillComment writes, as comments, what the quoted role r needs
// beyond the relay's grants to run `cdc-relay backfill`: TEMPORARY on the
// database (the keys it selects go in a temporary table), writing the
// table of backfills, and SELECT on what its predicate reads.
func writeBackfillComment(b *strings.Builder, cfg Config, r string) {
	b.WriteString("-- To run `cdc-relay backfill` as this role (not needed by the relay), uncomment: it keeps the keys it selects in a\n")
	b.WriteString("-- temporary table (TEMPORARY on the database; PUBLIC has it unless revoked) and its progress in the table of backfills.\n")
	b.WriteString(Comment(fmt.Sprintf("GRANT TEMPORARY ON DATABASE <database> TO %s;", r)))
	b.WriteString(Comment(fmt.Sprintf("GRANT INSERT, UPDATE ON %s TO %s;", BackfillTableName(cfg), r)))
	b.WriteString("-- It also needs SELECT on the tables its --where predicate reads besides the outbox table.\n")
}

// writeGrantsHeading writes the comment that opens the SQL of Grants for
// the quoted role r: when to run it, where the password goes, and the
// pg_hba.conf line the role needs.
func writeGrantsHeading(b *strings.Builder, r string) {
	b.WriteString("-- A least-privilege role for cdc-relay. Pipe this to psql as an administrator, after `cdc-relay migrate`.\n")
	b.WriteString("-- It sets no password. Set one afterwards, typed at a prompt rather than written here:\n")
	b.WriteString(Comment(fmt.Sprintf("  psql \"$ADMIN_URL\" -c '\\password %s'   (or ALTER ROLE %s PASSWORD '...'; or use certificates)", r, r)))
	b.WriteString("-- pg_hba.conf: the relay's connections, its logical replication one included, match the ordinary\n")
	b.WriteString(Comment(fmt.Sprintf("lines of its database, such as   host <database> %s <address> scram-sha-256", r)))
	b.WriteString("-- and not the `replication` keyword's, which are for physical replication only.\n")
}

// writeOutboxGrant writes the grant on the outbox table (quoted) to the
// quoted role r: SELECT, and DELETE when retention deletes its rows.
func writeOutboxGrant(b *strings.Builder, outbox, r string, deletes bool) {
	if deletes {
		b.WriteString("-- The outbox: SELECT for `cdc-relay recover`, DELETE for retention (--retention 0s needs none).\n")
		fmt.Fprintf(b, "GRANT SELECT, DELETE ON %s TO %s;\n", outbox, r)
		return
	}
	b.WriteString(Comment(fmt.Sprintf("The outbox %s: SELECT for `cdc-relay recover`. No DELETE: the relay deletes none of its rows "+
		"unless `run --retention` is given (then also GRANT DELETE ON %s TO %s).", outbox, outbox, r)))
	fmt.Fprintf(b, "GRANT SELECT ON %s TO %s;\n", outbox, r)
}

// Comment returns text as one SQL comment line, "-- text\n", its line
// breaks made spaces: a line break would end the comment, and what follows
// it, such as the rest of a quoted name, would run as SQL.
func Comment(text string) string {
	return "-- " + strings.NewReplacer("\r", " ", "\n", " ").Replace(text) + "\n"
}

// doBlock returns a DO statement that runs body, dollar-quoted with a tag
// that does not occur in it ($$ when it can), so that no name in body can
// end the block and run a statement of its own.
func doBlock(body string) string {
	body = " BEGIN\n" + body + "\nEND "
	tag := "$$"
	for i := 0; strings.Contains(body, tag); i++ {
		tag = "$grants" + strconv.Itoa(i) + "$"
	}
	return "DO " + tag + body + tag + ";\n"
}
