package migrations

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// EmitFunction is the SQL helper [CreateEmit] creates, with its argument
// types: an application calls it inside its business transaction to write
// an event that is in the WAL only.
const EmitFunction = "cdc_relay.emit(text, text, jsonb, jsonb, text)"

// CreateEmit leaves the schema cdc_relay and the function
// cdc_relay.emit(topic text, key text, payload jsonb, headers jsonb
// DEFAULT NULL, id text DEFAULT NULL) RETURNS pg_lsn in the database: it
// writes the relay's envelope (a JSON object with topic, key (null when
// NULL), payload, and headers and id only when they are not NULL, an
// empty id as NULL: the relay then uses the message's WAL position) as a
// transactional logical decoding message with prefix,
// pg_logical_emit_message(true, prefix, envelope), and returns the
// message's LSN. It raises, SQLSTATE 22004, on a NULL or empty topic,
// and, 22023, on headers that are not a JSON object, so that the
// application learns at once rather than from a parked event.
//
// The function is a SQL function that PostgreSQL inlines into the
// caller's query (one expression: no interpreter, and no setting changed
// per call), VOLATILE (it writes), and SECURITY INVOKER (it runs with
// the caller's privileges, and pg_logical_emit_message needs none). It
// sets no search_path, and needs none: every function, operator and type
// in its body is qualified with its schema, so that no object of the
// caller's search_path can stand in for what it calls. Its refusals are
// raised by the PL/pgSQL function cdc_relay.emit_refused(topic text,
// headers jsonb), created beside it, which it calls only then. EXECUTE
// on both stays PUBLIC's, as PostgreSQL grants a new function (and
// grants pg_logical_emit_message; a role that calls emit needs EXECUTE
// on emit_refused too); a role needs USAGE on the schema cdc_relay to
// call it, which CreateEmit does not grant.
//
// It is one statement, a transaction of its own, under the lock [Apply]
// takes. It is idempotent, and replaces the functions it finds, keeping
// their grants: one with another prefix, or the PL/pgSQL emit of earlier
// versions. It works on PostgreSQL 13 too, though the
// relay decodes messages from PostgreSQL 14 on.
func CreateEmit(ctx context.Context, db pgdb.DB, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("create %s: the message prefix is empty: give the prefix that the relay's messages: entry (or --message-prefix) names", EmitFunction)
	}
	b, err := files.ReadFile("sql/emit.sql")
	if err != nil {
		return err
	}
	// QueryRow runs a statement that returns no rows
	// as well: it reports pgx.ErrNoRows.
	var ignored any
	err = db.QueryRow(ctx, emitPlaceholders(prefix).Replace(string(b))).Scan(&ignored)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("create %s with prefix %q (migrate's role needs CREATE on the database for the schema cdc_relay, "+
			"or to own the schema and the function when they exist): %w", EmitFunction, prefix, err)
	}
	return nil
}

// emitPlaceholders fills emit.sql: the prefix as a literal, the comment,
// the migration lock's key, and two dollar-quote tags that occur in
// neither literal, so that no prefix can end a body and run a statement
// of its own.
func emitPlaceholders(prefix string) *strings.Replacer {
	literals := []string{
		"{{prefix}}", pgdb.QuoteLiteral(prefix),
		"{{comment}}", pgdb.QuoteLiteral("Writes an event for cdc-relay: the envelope {topic, key, payload, headers, id} as a transactional " +
			"logical decoding message " + emitPrefixMark + strconv.Quote(prefix) + "; returns its LSN. A NULL payload is a record with no value " +
			"(a tombstone on a compacted topic). Created by cdc-relay migrate."),
	}
	joined := strings.Join(literals, " ")
	tag := func(base string) string {
		t := "$" + base + "$"
		for i := 0; strings.Contains(joined, t); i++ {
			t = "$" + base + strconv.Itoa(i) + "$"
		}
		return t
	}
	return strings.NewReplacer(append(literals,
		"{{do_tag}}", tag("do"),
		"{{body_tag}}", tag("fn"),
		"{{lock_key}}", strconv.FormatInt(lockKey, 10),
	)...)
}
