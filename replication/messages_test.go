package replication_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/replication"
)

// TestStreamMessages: with Options.Messages the stream hands on the
// logical decoding messages of committed transactions, in commit order
// among their rows, and none of a rolled-back transaction or savepoint;
// a non-transactional message comes outside any transaction. Without it,
// pgoutput sends no message at all.
func TestStreamMessages(t *testing.T) {
	t.Parallel()
	ctx, db, admin := pg.ConnectDB(t, 2*time.Minute)
	var version int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 140000 {
		t.Skip("pgoutput sends messages from PostgreSQL 14 on")
	}
	tests := []struct {
		name     string
		messages bool
		want     []string
	}{
		{"messages", true, []string{"B", "M true a 1", "R", "I", "M true a 2", "C", "B", "I", "M true a 5", "C",
			"M false a 6", "B", "I", "M true b 8", "C"}},
		{"no messages", false, []string{"B", "R", "I", "C", "B", "I", "C", "B", "I", "C"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := replication.Connect(ctx, db.URL(), "test", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			slot := fmt.Sprintf("%s_msgs_%v", db.Name, tt.messages)
			created, err := conn.CreateSlot(ctx, slot)
			if err != nil {
				t.Fatal(err)
			}
			emitMessages(t, ctx, admin)
			got := streamUntil(t, ctx, conn, replication.Options{Slot: slot, Publication: "p", Messages: tt.messages,
				Start: created.ConsistentPoint, StatusInterval: 200 * time.Millisecond, StopTimeout: 5 * time.Second, Timeout: 5 * time.Second},
				len(tt.want))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("streamed %q, want %q", got, tt.want)
			}
		})
	}
}

// emitMessages commits messages and rows as TestStreamMessages expects
// them: a transaction with two messages around a row; one rolled back;
// one whose savepoint with a message is rolled back; a non-transactional
// message (sent at once, though its transaction rolls back); a last
// transaction with a row and a message of another prefix.
func emitMessages(t *testing.T, ctx context.Context, admin *pgx.Conn) {
	t.Helper()
	for _, sql := range []string{
		"BEGIN; SELECT pg_logical_emit_message(true, 'a', '1'); INSERT INTO t VALUES (1); SELECT pg_logical_emit_message(true, 'a', '2'); COMMIT",
		"BEGIN; SELECT pg_logical_emit_message(true, 'a', '3'); INSERT INTO t VALUES (2); ROLLBACK",
		"BEGIN; INSERT INTO t VALUES (3); SAVEPOINT s; SELECT pg_logical_emit_message(true, 'a', '4'); ROLLBACK TO s; SELECT pg_logical_emit_message(true, 'a', '5'); COMMIT",
		"BEGIN; SELECT pg_logical_emit_message(false, 'a', '6'); ROLLBACK",
		"BEGIN; INSERT INTO t VALUES (7); SELECT pg_logical_emit_message(true, 'b', '8'); COMMIT",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// streamUntil streams with opts until n messages arrived (or 10s
// passed), and returns them in order: B, I and C, "M <transactional>
// <prefix> <content>" for a message, other kinds by their byte.
func streamUntil(t *testing.T, ctx context.Context, conn *replication.Conn, opts replication.Options, n int) []string {
	t.Helper()
	tr := &tracker{}
	tr.safe.Store(uint64(opts.Start))
	opts.Tracker = tr
	var mu sync.Mutex
	var got []string
	sctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	err := conn.Stream(sctx, opts, func(_ pglogrepl.LSN, data []byte) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, describe(t, data))
		if len(got) >= n {
			stop()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// describe names one pgoutput message for streamUntil.
func describe(t *testing.T, data []byte) string {
	if data[0] != 'M' {
		return string(data[:1])
	}
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		t.Errorf("parse a message: %v", err)
		return "M?"
	}
	m := msg.(*pglogrepl.LogicalDecodingMessage)
	return fmt.Sprintf("M %v %s %s", m.Transactional, m.Prefix, m.Content)
}
