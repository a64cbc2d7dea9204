package relayproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// Proc is a running (or exited) relay process.
type Proc struct {
	cmd  *exec.Cmd
	log  syncbuf.Buffer
	done chan struct{}
	err  error // the exit error, set before done is closed
	note string
}

// Start runs bin with args in this process's environment; its standard
// output and error are kept for [Proc.Log].
func Start(bin string, args ...string) (*Proc, error) {
	return StartEnv(bin, nil, args...)
}

// StartEnv is [Start] with env ("KEY=value" entries) as the process's
// whole environment, so that a caller gives a child its variables without
// setting them in its own (nil: this process's environment).
func StartEnv(bin string, env []string, args ...string) (*Proc, error) {
	p := &Proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the exit error (nil for exit status 0) once [Proc.Done] is
// closed, and nil before.
func (p *Proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Running reports whether the process has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Note keeps what the caller did to the process, such as a kill at the
// end of a test, for [Proc.Ending] to say instead of its exit error.
func (p *Proc) Note(s string) { p.note = s }

// Ending says how the process ended: the caller's [Proc.Note] if it left
// one, else its exit status, or that it is still running.
func (p *Proc) Ending() string {
	switch {
	case p.note != "":
		return p.note
	case p.Running():
		return "still running"
	case p.Err() == nil:
		return "exited with status 0"
	default:
		return "exited: " + p.Err().Error()
	}
}

// Log returns everything the process wrote to its standard output and
// error so far.
func (p *Proc) Log() string { return p.log.String() }

// Stop sends SIGTERM and waits up to timeout for the process to exit. It
// returns the exit error, or, when the process did not exit in time, kills
// it and says so.
func (p *Proc) Stop(timeout time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM to relay %d: %w", p.Pid(), err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("relay exited with %w after SIGTERM", p.err)
		}
		return nil
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("relay did not exit within %s of SIGTERM; killed", timeout)
	}
}

// Kill sends SIGKILL and waits for the process to exit; on a process that
// has exited already it does nothing.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// CPU returns the user and system CPU time the running process has used.
func (p *Proc) CPU() (time.Duration, error) { return CPUTime(p.Pid()) }

// CPUTime returns the user and system CPU time that the running process
// pid has used; the benchmarks read it for PostgreSQL's processes too.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime, the 14th and 15th fields of
// /proc/<pid>/stat, in clock ticks of 1/100 s (USER_HZ on Linux).
func parseStatCPU(stat string) (time.Duration, error) {
	// The command name, the 2nd field, is in parentheses and may hold
	// spaces; count the fields after it.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 and 15 overall
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100, nil
}

// PeakRSS returns the running process's peak resident set size (VmHWM) in
// bytes.
func (p *Proc) PeakRSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0, fmt.Errorf("relay peak RSS: %w", err)
	}
	return parseVmHWM(string(b))
}

// parseVmHWM reads the "VmHWM: N kB" line of /proc/<pid>/status.
func parseVmHWM(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("relay peak RSS: parse %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("relay peak RSS: no VmHWM in /proc status")
}
