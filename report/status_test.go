package report

import "testing"

// TestNotReady: ready is a leader that streams, or a standby, with
// PostgreSQL and Kafka answering and no session error pending.
func TestNotReady(t *testing.T) {
	for _, tt := range []struct {
		name    string
		st      Status
		checked bool
		ready   bool
	}{
		{"streaming leader", Status{Role: RoleLeader, Streaming: true}, true, true},
		{"paused leader", Status{Role: RoleLeader, Streaming: true, Paused: true}, true, true},
		{"standby", Status{Role: RoleStandby}, true, true},
		{"standby failing its start checks", Status{Role: RoleStandby, StandbyProblem: "no REPLICATION"}, true, false},
		{"not checked yet", Status{Role: RoleLeader, Streaming: true}, false, false},
		{"leader not streaming yet", Status{Role: RoleLeader}, true, false},
		{"starting", Status{Role: RoleStarting}, true, false},
		{"stopped", Status{Role: RoleStopped}, true, false},
		{"Kafka away", Status{Role: RoleLeader, Streaming: true, KafkaError: "dial refused"}, true, false},
		{"PostgreSQL away", Status{Role: RoleStandby, PostgresError: "timeout"}, true, false},
		{"between sessions", Status{Role: RoleStarting, LastError: "receive: EOF"}, true, false},
	} {
		why := WhyNotReady(tt.st, tt.checked)
		if (why == "") != tt.ready {
			t.Errorf("%s: WhyNotReady = %q, want ready %v", tt.name, why, tt.ready)
		}
	}
}
