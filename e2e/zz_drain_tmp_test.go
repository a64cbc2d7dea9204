package e2e

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestTmpDrain(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 200; i++ {
		mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'order', 'key-' || (g % 100), 'Bulk', json_build_object('seq', g, 'pad', repeat('x', 200))::jsonb
		FROM generate_series(1, 1000) g`)
	}
	end := e.lsn(insertLSN)
	began := time.Now()
	extra := strings.Fields(os.Getenv("TMP_FLAGS"))
	relay := e.startRelayBin(plainBin, extra...)
	e.waitFor("drained", 3*time.Minute, func() bool { return e.lsn(slotLSN) >= end })
	t.Logf("flags %v: drained 200,000 in %s", extra, time.Since(began))
	relay.stop(30 * time.Second)
}
