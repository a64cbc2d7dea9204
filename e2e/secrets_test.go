package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestPostgresURLFromAFile: the relay reads its connection string from
// --postgres-url-file, here in the keyword/value form with spaces around
// "=" and a quoted password (the test cluster trusts local connections, so
// any password is accepted). Events flow, and the password shows neither in
// the relay's log, at debug level, nor on its command line.
func TestPostgresURLFromAFile(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	const secret = "s3cret-from-the-file"
	cfg, err := pgconn.ParseConfig(e.url)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "postgres-url")
	dsn := fmt.Sprintf("\n host=%s port=%d user=%s dbname=%s sslmode=disable password = '%s and more'\n",
		cfg.Host, cfg.Port, cfg.User, cfg.Database, secret)
	if err := os.WriteFile(file, []byte(dsn), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(withoutFlag(e.relayArgs(), "--postgres-url"), "--postgres-url-file", file, "--log-level", "debug")
	relay := e.startRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k1", "OrderPlaced", `{"n": 1}`)
	e.readN(e.topic("order"), 1, 30*time.Second)

	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(relay.Pid()) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	relay.stop(30 * time.Second)
	if strings.Contains(relay.Log(), secret) {
		t.Errorf("the relay logged the password")
	}
	if strings.Contains(string(cmdline), secret) {
		t.Errorf("the password is on the relay's command line")
	}
	if !strings.Contains(relay.Log(), fmt.Sprintf("postgres=postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)) {
		t.Errorf("the start-up line does not name the server")
	}
}

// withoutFlag returns args without the flag name and its value.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == name {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
