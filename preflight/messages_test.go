package preflight

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// versionRow answers CheckMessages' query with a version.
type versionRow struct {
	num     int
	version string
}

func (v versionRow) QueryRow(context.Context, string, ...any) pgx.Row { return v }
func (v versionRow) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	panic("CheckMessages runs no statement")
}
func (v versionRow) Query(context.Context, string, ...any) (pgx.Rows, error) {
	panic("CheckMessages queries one row")
}

func (v versionRow) Scan(dest ...any) error {
	*dest[0].(*int), *dest[1].(*string) = v.num, v.version
	return nil
}

// TestCheckMessagesByVersion: PostgreSQL 13 and earlier are refused with
// what to do, 14 and later pass.
func TestCheckMessagesByVersion(t *testing.T) {
	for _, tc := range []struct {
		row     versionRow
		refused bool
	}{
		{versionRow{130022, "13.22"}, true},
		{versionRow{139999, "13.99"}, true},
		{versionRow{140000, "14.0"}, false},
		{versionRow{180006, "18.6 (Debian 18.6-1)"}, false},
	} {
		p, err := CheckMessages(context.Background(), tc.row)
		switch {
		case err != nil:
			t.Errorf("%s: %v", tc.row.version, err)
		case tc.refused && p == nil:
			t.Errorf("%s: no problem, want messages refused", tc.row.version)
		case tc.refused && !strings.Contains(p.Msg, "PostgreSQL 14 or later") || tc.refused && !strings.Contains(p.Msg, tc.row.version) ||
			tc.refused && !strings.Contains(p.Msg, "upgrade it, or remove messages: from the config file / --message-prefix"):
			t.Errorf("%s: %q, want the version, the need and what to do", tc.row.version, p.Msg)
		case !tc.refused && p != nil:
			t.Errorf("%s: %q, want no problem", tc.row.version, p)
		}
	}
}

// TestCheckMessagesOnTheServer: the check refuses exactly the server
// whose pgoutput refuses the messages option, asked on a slot of the
// server the tests run (PG_BINDIR picks it: PostgreSQL 13 refuses it, 14
// and later take it).
func TestCheckMessagesOnTheServer(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pg.ConnectDB(t, time.Minute, "CREATE PUBLICATION p")
	if _, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", db.Name); err != nil {
		t.Fatal(err)
	}
	_, optionErr := conn.Exec(ctx, `SELECT count(*) FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL,
		'proto_version', '1', 'publication_names', 'p', 'messages', 'true')`, db.Name)
	p, err := CheckMessages(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if refused := p != nil; refused != (optionErr != nil) {
		t.Fatalf("the check says %v; pgoutput's answer to the messages option: %v", p, optionErr)
	}
	t.Logf("check: %v; pgoutput: %v", p, optionErr)
}
