package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// completionScript returns `cdc-relay completion shell`'s output.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"completion", shell}, &out, &errOut); code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, errOut.String())
	}
	return out.String()
}

// TestBashCompletion: the bash script, sourced by a real bash, completes
// the commands, failed's subcommands, and each one's flags, as a user's
// Tab would (COMP_WORDS up to the word being completed).
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	script := filepath.Join(t.TempDir(), "cdc-relay.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "bash")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string // the words typed, the last one being completed
		want string // COMPREPLY, space-separated
	}{
		{"cdc-relay fa", "failed"},
		{"cdc-relay c", "check-config config completion"},
		{"cdc-relay run --kafka-br", "--kafka-brokers"},
		{"cdc-relay run --ordering", "--ordering"},
		{"cdc-relay failed li", "list"},
		{"cdc-relay failed list --sta", "--state --status --status-table"},
		{"cdc-relay failed purge --d", "--dead"},
		{"cdc-relay completion z", "zsh"},
		{"cdc-relay config fr", "from-debezium"},
		{"cdc-relay config from-debezium --s", "--slot"},
		{"cdc-relay help ru", "run"},
		{"cdc-relay demo --nope", ""},
	} {
		t.Run(tc.line, func(t *testing.T) {
			words := strings.Fields(tc.line)
			quoted := make([]string, len(words))
			for i, w := range words {
				quoted[i] = "'" + w + "'"
			}
			prog := "source " + script + "; COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" +
				strconv.Itoa(len(words)-1) + `; _cdc_relay; echo "${COMPREPLY[*]}"`
			out, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("completion of %q: %q, want %q", tc.line, got, tc.want)
			}
		})
	}
}

// TestCompletionScripts: zsh's runs the bash function through
// bashcompinit; fish's names every command and, for each, its flags; a
// shell completion does not know is a usage error.
func TestCompletionScripts(t *testing.T) {
	zsh := completionScript(t, "zsh")
	for _, want := range []string{"#compdef cdc-relay\n", "bashcompinit", "_cdc_relay()", "complete -o default -F _cdc_relay cdc-relay"} {
		if !strings.Contains(zsh, want) {
			t.Errorf("the zsh script lacks %q", want)
		}
	}
	fish := completionScript(t, "fish")
	for _, want := range []string{
		"complete -c cdc-relay -n __fish_use_subcommand -a run -d 'stream outbox inserts to Kafka'",
		"complete -c cdc-relay -n '__fish_seen_subcommand_from run' -l kafka-brokers -r -F -d ",
		"complete -c cdc-relay -n '__fish_seen_subcommand_from run' -l kafka-create-topics -d ", // boolean: no value
		"complete -c cdc-relay -n '__fish_seen_subcommand_from failed; and __fish_seen_subcommand_from list' -l state -r -F -d ",
		"complete -c cdc-relay -n '__fish_seen_subcommand_from config; and __fish_seen_subcommand_from from-debezium' -l slot -r -F -d ",
		`-a help -d 'print this help, or a command\'s: cdc-relay help run'`,
	} {
		if !strings.Contains(fish, want) {
			t.Errorf("the fish script lacks %q", want)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"completion", "tcsh"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "want one shell: bash, zsh or fish") {
		t.Errorf("completion tcsh: exit %d, %q; want 2 and the shells it knows", code, errOut.String())
	}
}
