package main

import (
	"context"
	"fmt"
	"time"
)

// walKinds is the WAL of a range by resource manager (Heap, Btree,
// Transaction, LogicalMessage, …): the bytes of its records, full-page
// images included.
type walKinds map[string]int64

// walByKind reads the WAL from start to end by resource manager with
// pg_walinspect (PostgreSQL 15 and later, in contrib), or returns nil
// when the extension cannot be had. The WAL must still be on the server:
// the slot of the run holds it until the relay has read it.
func (b *bench) walByKind(ctx context.Context, start, end string) walKinds {
	if err := b.exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		logf("emit: no WAL by kind: %v", err)
		return nil
	}
	// pg_get_wal_stats reads only flushed WAL.
	err := poll(ctx, 30*time.Second, func() (bool, error) {
		var flushed bool
		err := b.conn.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn", end).Scan(&flushed)
		return flushed, err
	})
	if err != nil {
		logf("emit: no WAL by kind: WAL up to %s not flushed: %v", end, err)
		return nil
	}
	rows, err := b.conn.Query(ctx, `SELECT "resource_manager/record_type", combined_size
		FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, false) WHERE count > 0`, start, end)
	if err != nil {
		logf("emit: no WAL by kind: %v", err)
		return nil
	}
	defer rows.Close()
	kinds := walKinds{}
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			logf("emit: no WAL by kind: %v", err)
			return nil
		}
		kinds[kind] = n
	}
	if err := rows.Err(); err != nil {
		logf("emit: no WAL by kind: %v", fmt.Errorf("pg_get_wal_stats: %w", err))
		return nil
	}
	return kinds
}
