package relay

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// poolCloseWait bounds the wait for the pool to close when Run returns.
const poolCloseWait = 2 * time.Second

// closePool closes pool, waiting at most poolCloseWait. pgx gives each
// connection closed in the middle of a query (a query whose context ended)
// up to 15 s to drain what the server still sends; behind a silent network
// that takes the whole 15 s, and Run would return that much later after a
// partition. The rest of the close goes on in the background.
func closePool(pool *pgxpool.Pool) {
	closed := make(chan struct{})
	go func() {
		pool.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(poolCloseWait):
	}
}
