package migrations

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Grants returns the SQL, for an administrator to run after migrate, that
// creates role with the least the relay needs for cfg's tables: LOGIN and
// REPLICATION (the replication connection, and creating the slot), USAGE
// on the tables' schemas, SELECT on the outbox table (the relay reads the
// WAL, but `recover` reads the table) and DELETE on it (retention; not
// needed with --retention 0s), and writing the status table (with its id
// sequence), the checkpoint table and the table of paused topics. It grants nothing on the
// publication: streaming needs no privilege on it. An existing role gets
// the attributes and grants without being created again.
//
// Every name is quoted wherever it stands (identifiers, literals, DO
// bodies, comments), so that no name, whatever it holds, runs a statement
// of its own when the SQL is piped to psql.
func Grants(cfg Config, role string) string {
	r := pgx.Identifier{role}.Sanitize()
	outbox := pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize()
	status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
	checkpoint := pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize()
	var b strings.Builder
	fmt.Fprintf(&b, "-- A least-privilege role for cdc-relay. Run as an administrator after `cdc-relay migrate`,\n")
	b.WriteString(Comment(fmt.Sprintf("then give the role a password (ALTER ROLE %s PASSWORD '...') and allow it for", r)))
	fmt.Fprintf(&b, "-- replication connections in pg_hba.conf.\n")
	b.WriteString(doBlock(fmt.Sprintf("  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = %s) THEN\n    CREATE ROLE %s;\n  END IF;",
		quoteLiteral(role), r)))
	fmt.Fprintf(&b, "ALTER ROLE %s WITH LOGIN REPLICATION;\n", r)
	seen := map[string]bool{}
	for _, schema := range []string{cfg.OutboxSchema, cfg.StatusSchema, cfg.CheckpointSchema} {
		if !seen[schema] {
			seen[schema] = true
			fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s;\n", pgx.Identifier{schema}.Sanitize(), r)
		}
	}
	fmt.Fprintf(&b, "-- The outbox: SELECT for `cdc-relay recover`, DELETE for retention (--retention 0s needs none).\n")
	fmt.Fprintf(&b, "GRANT SELECT, DELETE ON %s TO %s;\n", outbox, r)
	fmt.Fprintf(&b, "-- The relay's own tables.\n")
	fmt.Fprintf(&b, "GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %s;\n", status, r)
	b.WriteString(doBlock(fmt.Sprintf("  EXECUTE format('GRANT USAGE ON SEQUENCE %%s TO %%I', pg_get_serial_sequence(%s, 'id'), %s);",
		quoteLiteral(status), quoteLiteral(role))))
	fmt.Fprintf(&b, "GRANT SELECT, INSERT, UPDATE ON %s TO %s;\n", checkpoint, r)
	fmt.Fprintf(&b, "-- The topics paused with `cdc-relay pause --topic`.\n")
	fmt.Fprintf(&b, "GRANT SELECT, INSERT, DELETE ON %s TO %s;\n", PauseTableName(cfg), r)
	return b.String()
}

// quoteLiteral quotes s as an SQL string literal, as PostgreSQL's
// quote_literal does: quotes doubled, and, when s holds a backslash, the
// backslashes doubled in an E'...' literal, so that the literal means s
// whatever standard_conforming_strings says. NUL bytes, which no name can
// hold, are dropped.
func quoteLiteral(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "'", "''")
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(s, `\`, `\\`) + "'"
	}
	return "'" + s + "'"
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
