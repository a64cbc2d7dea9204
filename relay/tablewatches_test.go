package relay

import (
	"testing"

	"github.com/jackc/pglogrepl"
)

// TestTableWatchesVouchForTheOldest: with several outbox tables, the relay
// confirms no further than the watch that vouches for least, and stops for
// the first table that left the publication.
func TestTableWatchesVouchForTheOldest(t *testing.T) {
	ws := tableWatches{{}, {}, {}}
	for i, lsn := range []pglogrepl.LSN{0x300, 0x100, 0x200} {
		ws[i].vouched.Store(uint64(lsn))
	}
	if got := ws.Vouched(); got != 0x100 {
		t.Fatalf("vouched %s, want the oldest, 0/100", got)
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
