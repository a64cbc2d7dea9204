package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
)

// standbyRole creates a role with the grants `migrate --print-grants`
// prints, then takes its REPLICATION attribute away, and returns the
// relay's arguments for it (beside extra) and the role's name.
func standbyRole(t *testing.T, e *env, extra ...string) (args []string, role string) {
	t.Helper()
	role = e.slot + "_standby"
	return grantedRole(t, e, role, "ALTER ROLE "+role+" NOREPLICATION;", extra...), role
}

// TestStandbyWithoutReplicationIsNotReady: a standby whose role lacks the
// REPLICATION attribute, which a takeover needs, is not ready, says why in
// /readyz and `cdc-relay status`, and logs it once; once the attribute is
// granted it becomes ready without a restart, and takes over when the
// leader stops.
func TestStandbyWithoutReplicationIsNotReady(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	leader := e.startRelay()
	args, role := standbyRole(t, e)
	standby := e.spawnRelayArgs(relayBin, args...)
	e.waitFor("the second relay stands by", 30*time.Second, func() bool { return strings.Contains(standby.Log(), "standing by") })

	var body string
	e.waitFor("the standby says it lacks REPLICATION", 30*time.Second, func() bool {
		var code int
		code, body = standby.call("GET", "/readyz", "")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "REPLICATION")
	})
	t.Logf("GET /readyz: %s", body)
	if !strings.Contains(body, "ALTER ROLE") || !strings.Contains(body, "takeover would fail") {
		t.Errorf("GET /readyz: %q, want what to do (ALTER ROLE ... WITH REPLICATION) and that a takeover would fail", body)
	}
	st := standby.status()
	if st.Role != "standby" || st.Ready || !strings.Contains(st.StandbyProblem, "REPLICATION") {
		t.Errorf("/status: role %q ready %v standby_problem %q, want a standby, not ready, naming REPLICATION", st.Role, st.Ready, st.StandbyProblem)
	}
	addr := strings.TrimPrefix(standby.endpoint(), "http://")
	out, _ := exec.Command(relayBin, "status", "--metrics-addr", addr).CombinedOutput()
	if !strings.Contains(string(out), "REPLICATION") {
		t.Errorf("cdc-relay status:\n%s\nwant it to name REPLICATION", out)
	}
	if !e.slotActive() || leader.status().Role != "leader" {
		t.Fatalf("the leader no longer streams the slot")
	}

	mustExec(t, e.conn, fmt.Sprintf("ALTER ROLE %s REPLICATION", role))
	e.waitFor("the standby is ready once the role has REPLICATION", 20*time.Second, func() bool {
		code, _ := standby.call("GET", "/readyz", "")
		return code == http.StatusOK
	})
	if n := strings.Count(standby.Log(), "this standby could not take over"); n != 1 {
		t.Errorf("the problem was logged %d times, want once:\n%s", n, standby.Log())
	}
	if !strings.Contains(standby.Log(), "start checks pass again") {
		t.Errorf("the standby does not say its checks pass again:\n%s", standby.Log())
	}

	leader.stop(30 * time.Second)
	e.waitFor("the standby takes over", 60*time.Second, func() bool {
		return strings.Contains(standby.Log(), "replication started") && e.slotActive()
	})
	insert(t, e.conn, "order", "k", "AfterTakeover", `{"n": 1}`)
	e.readN(e.topic("order"), 1, 60*time.Second)
}

// TestStandbyWithoutKafkaIsNotReady: a standby whose brokers do not answer
// is not ready, and says Kafka.
func TestStandbyWithoutKafkaIsNotReady(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.startRelay()
	port, err := freeport.Get() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	args := e.relayArgs()
	for i, a := range args {
		if a == "--kafka-brokers" {
			args[i+1] = fmt.Sprintf("127.0.0.1:%d", port)
		}
	}
	standby := e.spawnRelayArgs(relayBin, args...)
	e.waitFor("the second relay stands by", 60*time.Second, func() bool { return strings.Contains(standby.Log(), "standing by") })
	e.waitFor("the standby is not ready, naming Kafka", 30*time.Second, func() bool {
		code, body := standby.call("GET", "/readyz", "")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "Kafka")
	})
}
