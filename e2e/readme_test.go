package e2e

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

// readmeSetUp is the set-up of README.md's "Running it against your
// PostgreSQL and Kafka", its commands as written (comments dropped).
// TestReadmeSetUp fails when the README says otherwise: change both.
var readmeSetUp = []string{
	`make build`,
	`export ADMIN_URL='postgres://postgres@db:5432/app'`,
	`export CDC_RELAY_KAFKA_BROKERS='kafka-1:9092,kafka-2:9092'`,
	`CDC_RELAY_POSTGRES_URL="$ADMIN_URL" ./bin/cdc-relay migrate`,
	`./bin/cdc-relay migrate --print-grants relay | psql "$ADMIN_URL"`,
	`psql "$ADMIN_URL" -c '\password relay'`,
	`export CDC_RELAY_POSTGRES_URL='postgres://relay:secret@db:5432/app'`,
	`./bin/cdc-relay run`,
}

// readmeBlock returns the commands of README.md's set-up block, between
// its markers, without comments and blank lines.
func readmeBlock(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- set-up:")
	block, _, ok2 := strings.Cut(rest, "<!-- end of set-up -->")
	if !ok || !ok2 {
		t.Fatal("README.md lacks the set-up block's markers")
	}
	var cmds []string
	for _, line := range strings.Split(block, "\n")[1:] {
		line, _, _ = strings.Cut(line, " #")
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "```") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// TestReadmeSetUp runs README.md's set-up as a user would, on a database
// of its own: migrate as the superuser, the printed grants piped to psql,
// then `run` as the role they created, which streams an event and lacks no
// privilege. Every command runs as written, in a directory whose
// bin/cdc-relay is the binary under test, with the README's variables set
// to the test's cluster and broker, except two: `make build` (the binary is
// built) and `\password`, which needs a terminal: ALTER ROLE sets the same
// password. CDC_RELAY_SLOT and CDC_RELAY_TOPIC_TEMPLATE keep the test's
// slot and topics its own.
func TestReadmeSetUp(t *testing.T) {
	parallel(t)
	if got := readmeBlock(t); !slices.Equal(got, readmeSetUp) {
		t.Fatalf("README.md's set-up is\n%s\nthe test runs\n%s\nchange both", strings.Join(got, "\n"), strings.Join(readmeSetUp, "\n"))
	}
	e := newEnv(t)
	name := e.slot + "_readme"
	admin := mustConnect(t, cluster.URL("postgres"))
	defer admin.Close(context.Background())
	mustExec(t, admin, "CREATE DATABASE "+name)
	t.Cleanup(func() { dropReadmeSetUp(t, name) }) // after the relay is killed
	adminURL := cluster.URL(name)
	u, err := url.Parse(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("relay", "secret")

	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(relayBin, filepath.Join(dir, "bin", "cdc-relay")); err != nil {
		t.Fatal(err)
	}
	e.setRelayEnv("ADMIN_URL", adminURL)
	e.setRelayEnv("CDC_RELAY_KAFKA_BROKERS", strings.Join(e.brokers, ","))
	e.setRelayEnv("CDC_RELAY_SLOT", name)
	e.setRelayEnv("CDC_RELAY_TOPIC_TEMPLATE", e.prefix+".{aggregate_type}")
	e.setRelayEnv("CDC_RELAY_METRICS_ADDR", "127.0.0.1:0")
	if bin, err := pgtemp.FindBin(); err == nil {
		e.setRelayEnv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	shell := func(line string) {
		t.Helper()
		cmd := exec.Command("bash", "-o", "pipefail", "-c", line)
		cmd.Dir, cmd.Env = dir, e.childEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	shell(readmeSetUp[3])                                              // migrate as the administrator
	shell(readmeSetUp[4])                                              // the grants
	shell(`psql "$ADMIN_URL" -c "ALTER ROLE relay PASSWORD 'secret'"`) // \password relay, without a terminal
	e.setRelayEnv("CDC_RELAY_POSTGRES_URL", u.String())
	relay := e.spawnRelayArgs(filepath.Join(dir, "bin", "cdc-relay"), "run") // ./bin/cdc-relay run
	e.waitFor("the relay streams as role relay", 60*time.Second, func() bool {
		if !relay.Running() {
			t.Fatalf("relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		return strings.Contains(relay.Log(), "replication started")
	})
	conn := mustConnect(t, adminURL)
	defer conn.Close(context.Background())
	insert(t, conn, "order", "k", "Placed", `{"n": 1}`)
	assertValues(t, e.readN(e.topic("order"), 1, 30*time.Second), []string{`{"n": 1}`})
	var user string
	// The walsender of the test's slot: the cluster's other tests run relays too.
	if err := conn.QueryRow(context.Background(), `SELECT r.usename FROM pg_stat_replication r
		JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = $1`, name).Scan(&user); err != nil || user != "relay" {
		t.Fatalf("the replication connection's role is %q (%v), want relay", user, err)
	}
	relay.stop(30 * time.Second)
	for _, bad := range []string{"permission denied", "must be", "SQLSTATE 42501"} {
		if strings.Contains(relay.Log(), bad) {
			t.Fatalf("the relay lacked a privilege (%q):\n%s", bad, relay.Log())
		}
	}
}

// dropReadmeSetUp removes what TestReadmeSetUp made on the shared
// cluster: its slot, its database and the role relay.
func dropReadmeSetUp(t *testing.T, name string) {
	a := mustConnect(t, cluster.URL("postgres"))
	defer a.Close(context.Background())
	ctx := context.Background()
	_, _ = a.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", name)
	_, _ = a.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	_, _ = a.Exec(ctx, "DROP ROLE IF EXISTS relay")
}
