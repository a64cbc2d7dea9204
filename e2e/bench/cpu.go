package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/relayproc"
)

// The groups of processes whose CPU time a latency run reports, in table
// order, with their column headings.
var cpuGroups = []struct{ key, heading string }{
	{"relay", "relay"},
	{"walsender", "walsender"},
	{"backends", "other PG backends"},
	{"postgres", "PG background"},
	{"bench", "bench process"},
}

// cpuWatch knows which process belongs to which group.
type cpuWatch struct {
	group map[int]string // pid → group key
}

// cpuSample is the CPU time each watched process and the whole machine
// have used so far.
type cpuSample struct {
	at         time.Time
	proc       map[int]time.Duration
	busy, idle time.Duration // all CPUs, from /proc/stat
}

// cpuUse is CPU use over an interval in cores (1 is one core busy all the
// time): per group, the busy time of every other process on the machine,
// and the idle time.
type cpuUse struct {
	group      map[string]float64
	rest, idle float64
}

// watchCPU lists PostgreSQL's processes now running (walsenders, client
// backends, background processes), the relay (relayPid, 0 for none) and
// this process: the load generator, the consumer and the in-process broker.
func (b *bench) watchCPU(ctx context.Context, relayPid int) (*cpuWatch, error) {
	w := &cpuWatch{group: map[int]string{os.Getpid(): "bench"}}
	if relayPid != 0 {
		w.group[relayPid] = "relay"
	}
	rows, err := b.conn.Query(ctx, "SELECT pid, coalesce(backend_type, '') FROM pg_stat_activity")
	if err != nil {
		return nil, fmt.Errorf("list PostgreSQL's processes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		var kind string
		if err := rows.Scan(&pid, &kind); err != nil {
			return nil, fmt.Errorf("list PostgreSQL's processes: %w", err)
		}
		switch kind {
		case "walsender":
			w.group[pid] = "walsender"
		case "client backend":
			w.group[pid] = "backends"
		default:
			w.group[pid] = "postgres"
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list PostgreSQL's processes: %w", err)
	}
	return w, nil
}

// sample reads the CPU time of the watched processes (those that have
// exited are left out) and of the machine.
func (w *cpuWatch) sample() (cpuSample, error) {
	s := cpuSample{at: time.Now(), proc: map[int]time.Duration{}}
	for pid := range w.group {
		if d, err := relayproc.CPUTime(pid); err == nil {
			s.proc[pid] = d
		}
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, fmt.Errorf("machine CPU time: %w", err)
	}
	s.busy, s.idle, err = parseProcStat(string(b))
	return s, err
}

// parseProcStat reads the busy and idle time of all CPUs from the "cpu"
// line of /proc/stat (user nice system idle iowait irq softirq steal …, in
// 1/100 s).
func parseProcStat(stat string) (busy, idle time.Duration, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("machine CPU time: malformed /proc/stat line %q", line)
	}
	var ticks [8]int64
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("machine CPU time: %w", err)
		}
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / 100 }
	busy = tick(ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7])
	idle = tick(ticks[3] + ticks[4])
	return busy, idle, nil
}

// use is the CPU use between samples a and b of w's processes.
func (w *cpuWatch) use(a, b cpuSample) cpuUse {
	wall := b.at.Sub(a.at).Seconds()
	u := cpuUse{group: map[string]float64{}}
	var groups float64
	for pid, end := range b.proc {
		if start, ok := a.proc[pid]; ok {
			d := (end - start).Seconds() / wall
			u.group[w.group[pid]] += d
			groups += d
		}
	}
	u.rest = max(0, (b.busy-a.busy).Seconds()/wall-groups)
	u.idle = (b.idle - a.idle).Seconds() / wall
	return u
}
