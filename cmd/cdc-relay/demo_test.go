//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

// TestDemoCleansUpOnSignal runs `cdc-relay demo --events 0` as a process of
// its own and stops it with a signal at a stage of its life: while initdb
// runs, while the server starts, and while relaying (SIGHUP: the terminal
// was closed). Each time it must exit 0 and leave no cluster behind: no
// directory, no postgres process.
func TestDemoCleansUpOnSignal(t *testing.T) {
	if _, err := pgtemp.FindBin(); err != nil {
		if os.Getenv("CI") != "" || os.Getenv(pgtemp.VersionEnv) != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		// ready reports whether to send the signal now, given the demo's
		// output so far and its temporary directory.
		ready func(out, tmp string) bool
	}{
		{"SIGINT during initdb", syscall.SIGINT, func(_, tmp string) bool {
			return exists(tmp, "cdc-relay-pg-*/data")
		}},
		{"SIGINT while the server starts", syscall.SIGINT, func(_, tmp string) bool {
			return exists(tmp, "cdc-relay-pg-*/data/postmaster.pid")
		}},
		{"SIGHUP while relaying", syscall.SIGHUP, func(out, _ string) bool {
			return strings.Contains(out, "relaying")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// pgtemp makes the cluster's directory in TMPDIR; when root, the
			// server runs as "postgres", which must reach it.
			tmp, err := os.MkdirTemp("", "cdc-relay-demo-test-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			if err := os.Chmod(tmp, 0o755); err != nil {
				t.Fatal(err)
			}

			cmd := exec.Command(os.Args[0], "demo", "--events", "0")
			cmd.Env = append(os.Environ(), "CDC_RELAY_TEST_RUN_MAIN=1", "TMPDIR="+tmp)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			lines := make(chan string)
			go func() {
				s := bufio.NewScanner(stdout)
				for s.Scan() {
					lines <- s.Text()
				}
				close(lines)
				exited <- cmd.Wait()
			}()
			// On a failure below: SIGTERM stops the demo with its cleanup
			// (after a normal exit, Signal does nothing).
			t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM) })

			var out strings.Builder
			deadline := time.After(2 * time.Minute)
			for !tc.ready(out.String(), tmp) {
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatalf("the demo ended before the signal: %v\nstdout:\n%s\nstderr:\n%s", <-exited, out.String(), stderr.String())
					}
					out.WriteString(line + "\n")
				case <-time.After(time.Millisecond):
				case <-deadline:
					t.Fatalf("the demo did not reach the stage in 2 minutes\nstdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
				}
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			for line := range lines {
				out.WriteString(line + "\n")
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("the demo exited with %v, want 0", err)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("the demo did not exit within 2 minutes of %v", tc.sig)
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "cdc-relay-pg-*")); len(left) > 0 {
				t.Errorf("the cluster's directory is left behind: %v", left)
			}
			if procs := processesMentioning(tmp); len(procs) > 0 {
				t.Errorf("processes of the demo's cluster are still running:\n%s", strings.Join(procs, "\n"))
			}
		})
	}
}

func exists(dir, pattern string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	return len(m) > 0
}

// processesMentioning lists the processes whose command line contains s,
// such as a postmaster's "-D <dir>/data" (Linux; elsewhere none).
func processesMentioning(s string) []string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []string
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if line := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(line, s) {
			found = append(found, filepath.Base(filepath.Dir(f))+" "+line)
		}
	}
	return found
}
