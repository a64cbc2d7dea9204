package preflight

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestCheckResetTrigger: a table whose write-back lists pending values is
// a problem until migrate gives it the reset trigger, and again when the
// trigger is disabled, passes other arguments or calls another status
// table's function; a table without pending values, or without the status
// column, is not. The check runs in a read-only transaction.
func TestCheckResetTrigger(t *testing.T) {
	t.Parallel()
	ctx, conn := startDB(t)
	pending := strings.Replace(orders, "delivered_at_column: sent_at", "delivered_at_column: sent_at, pending: [NEW]", 1)
	migrate := func() {
		cfg := migrations.DefaultConfig()
		cfg.OutboxTable, cfg.SkipOutbox = "orders_outbox", true
		cfg.Reset = migrations.Reset{IDColumn: "id", StatusColumn: "state", Pending: []string{"NEW"}}
		if _, err := migrations.Apply(ctx, conn, cfg); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		before func()
		yaml   string
		names  Names
		want   string // the problem, "table|column|message" (its start), or ""
	}{
		{name: "before migrate", yaml: pending, names: names, want: "public.orders_outbox|state|" + noResetTrigger +
			"; until then, setting a row's status back to a pending value does not send its event again"},
		{name: "no pending values", yaml: orders, names: names},
		{name: "no status column", yaml: strings.Replace(pending, "status_column: state", "status_column: nosuch", 1), names: names,
			want: `public.orders_outbox|nosuch|has no column "nosuch" (write_back.status_column)`},
		{name: "after migrate", before: migrate, yaml: pending, names: names},
		{name: "another status table", yaml: pending, names: Names{Publication: "cdc_relay", StatusSchema: "public", StatusTable: "other_delivery", ConfigPath: "/etc/relay.yaml"},
			want: "public.orders_outbox|state|has pending values but a reset trigger that calls " +
				`public.outbox_delivery_note_reset() instead of "public"."other_delivery_note_reset"(): run ` + "`cdc-relay migrate --config /etc/relay.yaml`"},
		{name: "disabled", before: exec(ctx, t, conn, "ALTER TABLE orders_outbox DISABLE TRIGGER cdc_relay_reset"), yaml: pending, names: names,
			want: "public.orders_outbox|state|has pending values but a reset trigger that is disabled: run `cdc-relay migrate --config relay.yaml`"},
		{name: "other arguments", before: exec(ctx, t, conn, `DROP TRIGGER cdc_relay_reset ON orders_outbox;
			CREATE TRIGGER cdc_relay_reset AFTER UPDATE ON orders_outbox FOR EACH ROW EXECUTE FUNCTION outbox_delivery_note_reset('order_id', 'public.orders_outbox')`),
			yaml: pending, names: names,
			want: `public.orders_outbox|state|has pending values but a reset trigger that passes the arguments ["order_id" "public.orders_outbox"] instead of ["id" "public.orders_outbox"]`},
		{name: "migrate again", before: migrate, yaml: pending, names: names},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			res, err := CheckTable(ctx, tx, tc.names, tables(t, tc.yaml)[0])
			if err != nil {
				t.Fatal(err)
			}
			got := problemStrings(res.Problems)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("problems %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tc.want)):
				t.Errorf("problems %q, want one starting %q", got, tc.want)
			}
		})
	}
}

// exec returns a step that runs sql.
func exec(ctx context.Context, t *testing.T, conn *pgx.Conn, sql string) func() {
	return func() {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}
