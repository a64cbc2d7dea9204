package migrations

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// emitted is one logical decoding message the slot holds.
type emitted struct {
	transactional bool
	prefix        string
	lsn           pglogrepl.LSN
	envelope      map[string]any
}

// peekMessages reads, without consuming them, the messages of slot as
// pgoutput sends them to the relay (messages 'true', publication
// cdc_relay), their content parsed as JSON.
func peekMessages(t *testing.T, conn *pgx.Conn, slot string) []emitted {
	t.Helper()
	var out []emitted
	for _, m := range peekRaw(t, conn, slot) {
		e := emitted{transactional: m.Transactional, prefix: m.Prefix, lsn: m.LSN}
		if err := json.Unmarshal(m.Content, &e.envelope); err != nil {
			t.Fatalf("content %q is not a JSON object: %v", m.Content, err)
		}
		out = append(out, e)
	}
	return out
}

// peekRaw reads, without consuming them, the logical decoding messages
// of slot as pgoutput sends them to the relay (messages 'true',
// publication cdc_relay).
func peekRaw(t *testing.T, conn *pgx.Conn, slot string) []*pglogrepl.LogicalDecodingMessage {
	t.Helper()
	rows, _ := conn.Query(context.Background(), `SELECT data FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL,
		'proto_version', '1', 'publication_names', 'cdc_relay', 'messages', 'true')`, slot)
	datas, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatal(err)
	}
	var out []*pglogrepl.LogicalDecodingMessage
	for _, d := range datas {
		msg, err := pglogrepl.Parse(d)
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := msg.(*pglogrepl.LogicalDecodingMessage); ok {
			out = append(out, m)
		}
	}
	return out
}

// slotName is the test's replication slot: its database's name, unique
// on the package's cluster.
func slotName(conn *pgx.Conn) string { return conn.Config().Database }

// serverVersion is the server's server_version_num.
func serverVersion(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var v int
	if err := conn.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestEmitWritesTheEnvelope: cdc_relay.emit writes, in committed
// transactions only, transactional messages with the prefix, whose
// content is the envelope (key null when NULL, headers and id only when
// given), and returns each one's LSN: the LSN pgoutput gives the message,
// which the decoder makes the event's id when the envelope has none. A rolled-back transaction and a
// rolled-back savepoint leave none. On PostgreSQL 13, whose pgoutput
// sends no messages, the function is created and writes all the same.
func TestEmitWritesTheEnvelope(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := Apply(ctx, conn, messagesOnly()); err != nil {
		t.Fatal(err)
	}
	if err := CreateEmit(ctx, conn, "outbox"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slotName(conn)); err != nil {
		t.Fatal(err)
	}
	var first, second pglogrepl.LSN
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT cdc_relay.emit('orders', '42', '{"total": 10}')::text`).Scan(&first); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SAVEPOINT sp; SELECT cdc_relay.emit('orders', 'undone', 'null'); ROLLBACK TO SAVEPOINT sp")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT cdc_relay.emit('orders.audit', NULL, '"text"', '{"event_type": "OrderPlaced"}', 'my-id')::text`).Scan(&second); err != nil {
		t.Fatal(err)
	}
	// An empty id is no id: the relay gives the event its WAL position.
	var third pglogrepl.LSN
	if err := conn.QueryRow(ctx, `SELECT cdc_relay.emit('orders', '44', '{}', NULL, '')::text`).Scan(&third); err != nil {
		t.Fatal(err)
	}
	rolledBack := errors.New("rolled back")
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT cdc_relay.emit('orders', '43', '{}')"); err != nil {
			return err
		}
		return rolledBack
	}); !errors.Is(err, rolledBack) {
		t.Fatal(err)
	}
	if first == 0 || second <= first {
		t.Fatalf("emit returned %s then %s; want two increasing LSNs", first, second)
	}
	if serverVersion(t, conn) < 140000 {
		t.Log("PostgreSQL 13's pgoutput has no messages option: the helper writes, the relay cannot decode")
		return
	}
	want := []emitted{
		{transactional: true, prefix: "outbox", lsn: first, envelope: map[string]any{"topic": "orders", "key": "42", "payload": map[string]any{"total": 10.0}}},
		{transactional: true, prefix: "outbox", lsn: second, envelope: map[string]any{"topic": "orders.audit", "key": nil, "payload": "text",
			"headers": map[string]any{"event_type": "OrderPlaced"}, "id": "my-id"}},
		{transactional: true, prefix: "outbox", lsn: third, envelope: map[string]any{"topic": "orders", "key": "44", "payload": map[string]any{}}},
	}
	if got := peekMessages(t, conn, slotName(conn)); !reflect.DeepEqual(got, want) {
		t.Errorf("messages:\n got %+v\nwant %+v", got, want)
	}
}

// TestEmitRefusesWhatCouldGoNowhere: a NULL or empty topic, and headers
// that are not a JSON object, raise with the SQLSTATE CreateEmit names,
// and write nothing.
func TestEmitRefusesWhatCouldGoNowhere(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if err := CreateEmit(ctx, conn, "outbox"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ call, code string }{
		{"SELECT cdc_relay.emit(NULL, 'k', '{}')", "22004"},
		{"SELECT cdc_relay.emit('', 'k', '{}')", "22004"},
		{`SELECT cdc_relay.emit('t', 'k', '{}', '["a"]')`, "22023"},
		{`SELECT cdc_relay.emit('t', 'k', '{}', '"a"')`, "22023"},
	} {
		_, err := conn.Exec(ctx, tt.call)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tt.code || pgErr.Hint == "" {
			t.Errorf("%s: %v; want SQLSTATE %s with a hint", tt.call, err, tt.code)
		}
	}
	// JSON null headers are no headers.
	if _, err := conn.Exec(ctx, `SELECT cdc_relay.emit('t', 'k', '{}', 'null')`); err != nil {
		t.Error(err)
	}
}

// TestEmitReplacedWithAnotherPrefix: CreateEmit runs again and again; with
// another prefix (quotes, a backslash and the dollar-quote tags in it) it
// replaces the function, which then writes that prefix, and keeps the
// function's grants.
func TestEmitReplacedWithAnotherPrefix(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := Apply(ctx, conn, messagesOnly()); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := EmitPrefix(ctx, conn); err != nil || ok {
		t.Fatalf("EmitPrefix before migrate made the function: %q, %v, %v; want none", got, ok, err)
	}
	odd := `it's $fn$ $do$ \ {{prefix}} "with the prefix "`
	for _, prefix := range []string{"outbox", "outbox", odd} {
		if err := CreateEmit(ctx, conn, prefix); err != nil {
			t.Fatalf("prefix %q: %v", prefix, err)
		}
		if got, ok, err := EmitPrefix(ctx, conn); err != nil || !ok || got != prefix {
			t.Errorf("EmitPrefix after CreateEmit(%q): %q, %v, %v", prefix, got, ok, err)
		}
		if prefix == "outbox" {
			if _, err := conn.Exec(ctx, "REVOKE EXECUTE ON FUNCTION "+EmitFunction+" FROM PUBLIC"); err != nil {
				t.Fatal(err)
			}
		}
	}
	var functions int
	var publicExecute bool
	if err := conn.QueryRow(ctx, `SELECT count(*), bool_or(has_function_privilege('public', p.oid, 'EXECUTE')) FROM pg_proc AS p
		JOIN pg_namespace AS n ON n.oid = p.pronamespace WHERE n.nspname = 'cdc_relay' AND p.proname = 'emit'`).Scan(&functions, &publicExecute); err != nil {
		t.Fatal(err)
	}
	if functions != 1 || publicExecute {
		t.Errorf("%d functions cdc_relay.emit, PUBLIC may execute: %v; want 1, and the REVOKE kept", functions, publicExecute)
	}
	if serverVersion(t, conn) < 140000 {
		return
	}
	if _, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slotName(conn)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT cdc_relay.emit('t', 'k', '{}')"); err != nil {
		t.Fatal(err)
	}
	if got := peekMessages(t, conn, slotName(conn)); len(got) != 1 || got[0].prefix != odd {
		t.Errorf("messages %+v; want one with prefix %q", got, odd)
	}
}

// TestEmitGrants: a plain role calls cdc_relay.emit once it has USAGE on
// the schema cdc_relay (EXECUTE is PUBLIC's, and pg_logical_emit_message
// needs no privilege), and not before; a role with REPLICATION and no
// other privilege reads the messages.
func TestEmitGrants(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := Apply(ctx, conn, messagesOnly()); err != nil {
		t.Fatal(err)
	}
	if err := CreateEmit(ctx, conn, "outbox"); err != nil {
		t.Fatal(err)
	}
	// Roles are the cluster's: named after the test's database.
	app, relay := "app_"+slotName(conn), "relay_"+slotName(conn)
	for _, sql := range []string{"CREATE ROLE " + app + " LOGIN", "CREATE ROLE " + relay + " LOGIN REPLICATION", "SELECT pg_create_logical_replication_slot('" + slotName(conn) + "', 'pgoutput')"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	asApp := "SET ROLE " + app + "; SELECT cdc_relay.emit('orders', '1', '{}'); RESET ROLE"
	_, err := conn.Exec(ctx, asApp)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("without USAGE on the schema: %v; want permission denied", err)
	}
	if _, err := conn.Exec(ctx, "RESET ROLE; GRANT USAGE ON SCHEMA cdc_relay TO "+app); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, asApp); err != nil {
		t.Fatalf("with the documented grant: %v", err)
	}
	if serverVersion(t, conn) < 140000 {
		return
	}
	if _, err := conn.Exec(ctx, "SET ROLE "+relay); err != nil {
		t.Fatal(err)
	}
	got := peekMessages(t, conn, slotName(conn))
	if _, err := conn.Exec(ctx, "RESET ROLE"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].envelope["key"] != "1" {
		t.Errorf("the relay's role read %+v; want the app's one message", got)
	}
}
