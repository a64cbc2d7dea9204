package pubwatch

import (
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// TestTableWatchesVouchForTheOldest: with several outbox tables, the relay
// confirms no further than the watch that vouches for least, and stops for
// the first table that left the publication.
func TestTableWatchesVouchForTheOldest(t *testing.T) {
	ws := Watches{{}, {}, {}}
	at := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	for i, lsn := range []pglogrepl.LSN{0x300, 0x100, 0x200} {
		ws[i].vouched.Store(&checkpoint.Position{LSN: lsn, CommitTime: at.Add(time.Duration(lsn))})
	}
	if got := ws.Vouched(); got != 0x100 {
		t.Fatalf("vouched %s, want the oldest, 0/100", got)
	}
	if got := ws.VouchedAt(); got.LSN != 0x100 || !got.CommitTime.Equal(at.Add(0x100)) {
		t.Fatalf("vouched %s at %s, want the oldest with its time", got.LSN, got.CommitTime)
	}
	if err := ws.Err(); err != nil {
		t.Fatalf("err %v with every table published", err)
	}
	gone := &tableGoneError{what: "the second table left"}
	ws[1].err.Store(gone)
	if err := ws.Err(); err != gone {
		t.Fatalf("err %v, want the second table's", err)
	}
}
