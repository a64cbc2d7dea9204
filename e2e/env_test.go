package e2e

import (
	"strings"
	"testing"
)

// TestUnknownEnvironmentVariable: `run` logs a warning (on stderr) of a CDC_RELAY_
// variable no flag reads, with the name it most likely meant, and runs.
func TestUnknownEnvironmentVariable(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.setRelayEnv("CDC_RELAY_SLOTT", "typo")
	relay := e.startRelay()
	want := `level=WARN msg="unknown environment variable CDC_RELAY_SLOTT: no flag reads it; did you mean CDC_RELAY_SLOT?"`
	if !strings.Contains(relay.Log(), want) {
		t.Errorf("the relay's output lacks %q:\n%s", want, relay.Log())
	}
	if strings.Contains(relay.Log(), "CDC_RELAY_TEST") {
		t.Errorf("the relay was given the harness's variables:\n%s", relay.Log())
	}
}
