package migrations

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// emitCall is one call of cdc_relay.emit: its arguments, nil for NULL.
type emitCall struct {
	topic, key, payload, headers, id *string
}

// s is a pointer to v, for emitCall's arguments.
func s(v string) *string { return &v }

// call runs c on conn as a prepared statement, the arguments as
// parameters, as an application's driver calls the function.
func (c emitCall) call(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "SELECT cdc_relay.emit($1, $2, $3::jsonb, $4::jsonb, $5)", c.topic, c.key, c.payload, c.headers, c.id)
	return err
}

// acceptedCalls are calls cdc_relay.emit writes a message for: every
// branch of its envelope (headers an object, JSON null, NULL; an id, an
// empty one, NULL), with a NULL key and payload, and text that JSON
// escapes.
var acceptedCalls = []emitCall{
	{topic: s("orders"), key: s("42"), payload: s(`{"total": 10}`)},
	{topic: s("orders.audit"), payload: s(`"text"`), headers: s(`{"event_type": "OrderPlaced"}`), id: s("my-id")},
	{topic: s("orders"), key: s("44"), payload: s(`{}`), id: s("")},
	{topic: s("t"), key: s(""), payload: s(`null`), headers: s(`null`), id: s("x")},
	{topic: s("zamówienia"), key: s("ключ \"q\" \\"), payload: s(`{"b": [1, 2.50, {"a": null}], "a": "é\n\t"}`), headers: s(`{}`)},
	{topic: s("t"), key: s("k"), headers: s(`{"b": "2", "a": "1"}`), id: s("")},
}

// refusedCalls are calls cdc_relay.emit refuses: a NULL or empty topic
// (first, whatever the headers), headers that are not an object.
var refusedCalls = []emitCall{
	{key: s("k"), payload: s(`{}`)},
	{topic: s(""), key: s("k"), payload: s(`{}`)},
	{topic: s(""), key: s("k"), payload: s(`{}`), headers: s(`["a"]`)},
	{topic: s("t"), key: s("k"), payload: s(`{}`), headers: s(`["a"]`)},
	{topic: s("t"), key: s("k"), payload: s(`{}`), headers: s(`"a"`)},
	{topic: s("t"), key: s("k"), payload: s(`{}`), headers: s(`1`), id: s("x")},
}

// runCalls calls every accepted call, then every refused one, and
// returns the refused ones' errors.
func runCalls(t *testing.T, conn *pgx.Conn) []pgconn.PgError {
	t.Helper()
	ctx := context.Background()
	for _, c := range acceptedCalls {
		if err := c.call(ctx, conn); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	var errs []pgconn.PgError
	for _, c := range refusedCalls {
		var pgErr *pgconn.PgError
		if err := c.call(ctx, conn); !errors.As(err, &pgErr) {
			t.Fatalf("%+v: %v; want PostgreSQL's error", c, err)
		}
		// Only what the application sees; not where in the source it was raised.
		errs = append(errs, pgconn.PgError{Severity: pgErr.Severity, Code: pgErr.Code, Message: pgErr.Message, Detail: pgErr.Detail, Hint: pgErr.Hint})
	}
	return errs
}

// TestEmitUpgradedFromPLpgSQL: a database migrated by an earlier version
// holds cdc_relay.emit in PL/pgSQL (testdata/emit_plpgsql.sql), with its
// EXECUTE revoked from PUBLIC and granted to the application's role.
// CreateEmit replaces it with the SQL function, grants kept, prefix read
// back, and the new one writes, for every call, the very bytes the old
// one wrote (prefix, transactional, content), and refuses what the old
// one refused with the same SQLSTATE, message and hint.
func TestEmitUpgradedFromPLpgSQL(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := Apply(ctx, conn, messagesOnly()); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile("testdata/emit_plpgsql.sql")
	if err != nil {
		t.Fatal(err)
	}
	app := "app_" + slotName(conn)
	for _, sql := range []string{
		emitPlaceholders("outbox").Replace(string(old)),
		"REVOKE EXECUTE ON FUNCTION " + EmitFunction + " FROM PUBLIC",
		"CREATE ROLE " + app,
		"GRANT USAGE ON SCHEMA cdc_relay TO " + app,
		"GRANT EXECUTE ON FUNCTION " + EmitFunction + " TO " + app,
		"SELECT pg_create_logical_replication_slot('" + slotName(conn) + "', 'pgoutput')",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var lang string
	if err := conn.QueryRow(ctx, "SELECT l.lanname FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang WHERE p.oid = to_regprocedure($1)", EmitFunction).Scan(&lang); err != nil || lang != "plpgsql" {
		t.Fatalf("the earlier version's function: %q, %v; want plpgsql", lang, err)
	}
	oldErrs := runCalls(t, conn)

	if err := CreateEmit(ctx, conn, "outbox"); err != nil {
		t.Fatal(err)
	}
	var config []string
	var appExecute, publicExecute bool
	if err := conn.QueryRow(ctx, `SELECT l.lanname, p.proconfig, has_function_privilege($2, p.oid, 'EXECUTE'), has_function_privilege('public', p.oid, 'EXECUTE')
		FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang WHERE p.oid = to_regprocedure($1)`, EmitFunction, app).
		Scan(&lang, &config, &appExecute, &publicExecute); err != nil {
		t.Fatal(err)
	}
	if lang != "sql" || config != nil || !appExecute || publicExecute {
		t.Errorf("after CreateEmit: language %s, settings %q, %s may execute: %v, PUBLIC: %v; want sql, none, true, false", lang, config, app, appExecute, publicExecute)
	}
	if prefix, ok, err := EmitPrefix(ctx, conn); err != nil || !ok || prefix != "outbox" {
		t.Errorf("EmitPrefix: %q, %v, %v", prefix, ok, err)
	}
	// As the application's role, with the grants the upgrade kept.
	if _, err := conn.Exec(ctx, "SET ROLE "+app); err != nil {
		t.Fatal(err)
	}
	newErrs := runCalls(t, conn)
	if _, err := conn.Exec(ctx, "RESET ROLE"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(newErrs, oldErrs) {
		t.Errorf("refusals:\n got %+v\nwant %+v", newErrs, oldErrs)
	}
	if serverVersion(t, conn) < 140000 {
		return
	}
	msgs := peekRaw(t, conn, slotName(conn))
	if len(msgs) != 2*len(acceptedCalls) {
		t.Fatalf("%d messages; want %d", len(msgs), 2*len(acceptedCalls))
	}
	for i, c := range acceptedCalls {
		before, after := msgs[i], msgs[len(acceptedCalls)+i]
		if after.Prefix != before.Prefix || after.Transactional != before.Transactional || string(after.Content) != string(before.Content) {
			t.Errorf("%+v: the SQL function wrote %q (%s, %v); the PL/pgSQL one %q (%s, %v)", c,
				after.Content, after.Prefix, after.Transactional, before.Content, before.Prefix, before.Transactional)
		}
	}
}

// TestEmitIsInlinedSQL: cdc_relay.emit is a SQL function with no
// settings of its own, SECURITY INVOKER, which PostgreSQL inlines into
// the caller's query: the plan calls pg_logical_emit_message, not emit.
func TestEmitIsInlinedSQL(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if err := CreateEmit(ctx, conn, "outbox"); err != nil {
		t.Fatal(err)
	}
	var lang string
	var config []string
	var definer bool
	if err := conn.QueryRow(ctx, `SELECT l.lanname, p.proconfig, p.prosecdef FROM pg_proc AS p
		JOIN pg_language AS l ON l.oid = p.prolang WHERE p.oid = to_regprocedure($1)`, EmitFunction).Scan(&lang, &config, &definer); err != nil {
		t.Fatal(err)
	}
	if lang != "sql" || config != nil || definer {
		t.Errorf("language %s, settings %q, SECURITY DEFINER %v; want sql, none, false", lang, config, definer)
	}
	// The generic plan of a prepared call, as a driver's prepared
	// statement runs after its first few executions, and a call with
	// constants; EXPLAIN without ANALYZE runs neither.
	for _, call := range []string{
		"SET plan_cache_mode = force_generic_plan; PREPARE call(text, text, jsonb, jsonb, text) AS SELECT cdc_relay.emit($1, $2, $3, $4, $5); " +
			`EXPLAIN (VERBOSE) EXECUTE call('orders', '42', '{"total": 10}', NULL, NULL)`,
		`EXPLAIN (VERBOSE) SELECT cdc_relay.emit('orders', '42', '{"total": 10}')`,
	} {
		lines, err := explain(ctx, conn, call)
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "cdc_relay.emit(") || !strings.Contains(plan, "pg_logical_emit_message") {
			t.Errorf("%s: the plan calls emit, not inlined:\n%s", call, plan)
		}
	}
}

// explain runs sql, ending in an EXPLAIN, as it stands (in the simple
// protocol) and returns the plan's lines.
func explain(ctx context.Context, conn *pgx.Conn, sql string) ([]string, error) {
	res, err := conn.PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, r := range res {
		for _, row := range r.Rows {
			lines = append(lines, string(row[0]))
		}
	}
	return lines, nil
}

// TestEmitIgnoresTheCallersSearchPath: a caller whose search_path puts a
// schema of its own before pg_catalog, one with look-alike functions and
// operators (an emit message that writes nothing, a jsonb_typeof that
// says object, text operators that always hold, a type text), still gets the
// envelope written, and the refusals.
func TestEmitIgnoresTheCallersSearchPath(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := Apply(ctx, conn, messagesOnly()); err != nil {
		t.Fatal(err)
	}
	if err := CreateEmit(ctx, conn, "outbox"); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"CREATE SCHEMA shadow",
		"CREATE FUNCTION shadow.pg_logical_emit_message(boolean, text, text) RETURNS pg_lsn LANGUAGE sql AS $$SELECT '0/1'::pg_lsn$$",
		"CREATE FUNCTION shadow.jsonb_typeof(jsonb) RETURNS text LANGUAGE sql AS $$SELECT 'object'$$",
		"CREATE FUNCTION shadow.holds(text, text) RETURNS boolean LANGUAGE sql AS $$SELECT true$$",
		"CREATE OPERATOR shadow.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = shadow.holds)",
		"CREATE OPERATOR shadow.= (LEFTARG = text, RIGHTARG = text, FUNCTION = shadow.holds)",
		"CREATE FUNCTION shadow.text(jsonb) RETURNS text LANGUAGE sql AS $$SELECT 'shadowed'$$",
		"CREATE DOMAIN shadow.text AS pg_catalog.text CHECK (VALUE = 'shadowed')",
		"SELECT pg_create_logical_replication_slot('" + slotName(conn) + "', 'pgoutput')",
		"SET search_path = shadow, pg_catalog",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, tt := range []struct{ call, code string }{
		{"SELECT cdc_relay.emit('', 'k', '{}')", "22004"},
		{`SELECT cdc_relay.emit('t', 'k', '{}', '["a"]')`, "22023"},
	} {
		_, err := conn.Exec(ctx, tt.call)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tt.code {
			t.Errorf("%s: %v; want SQLSTATE %s", tt.call, err, tt.code)
		}
	}
	var lsn string
	if err := conn.QueryRow(ctx, `SELECT cdc_relay.emit('orders', '42', '{"total": 10}', NULL, 'my-id')::pg_catalog.text`).Scan(&lsn); err != nil || lsn == "0/1" {
		t.Fatalf("emit under the shadowing search_path: %s, %v", lsn, err)
	}
	if _, err := conn.Exec(ctx, "RESET search_path"); err != nil {
		t.Fatal(err)
	}
	if serverVersion(t, conn) < 140000 {
		return
	}
	msgs := peekRaw(t, conn, slotName(conn))
	want := `{"id": "my-id", "key": "42", "topic": "orders", "payload": {"total": 10}}`
	if len(msgs) != 1 || string(msgs[0].Content) != want || msgs[0].Prefix != "outbox" {
		for _, m := range msgs {
			t.Logf("message %s: %s", m.Prefix, m.Content)
		}
		t.Errorf("%d messages; want one with prefix outbox and content %s", len(msgs), want)
	}
}
