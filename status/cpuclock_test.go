package status

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuClock measures the CPU time a benchmark's timed sections spend, in
// the benchmark's process and in its pool's one PostgreSQL backend: on a
// machine other work shares, their wall time varies far more than it.
type cpuClock struct {
	backend int           // the server process's pid
	spent   time.Duration // the sections' CPU time so far
	began   time.Duration // the CPU time at the section's start
}

// newCPUClock returns a clock of pool, which must have one connection
// (MaxConns 1): its backend runs every statement.
func newCPUClock(ctx context.Context, b *testing.B, pool *pgxpool.Pool) *cpuClock {
	b.Helper()
	var pid int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	return &cpuClock{backend: pid}
}

// now is the CPU time of the benchmark's process and of the backend.
func (c *cpuClock) now(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	own := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", c.backend)) // its time on a CPU, in ns
	if err != nil {
		b.Fatal(err)
	}
	var server int64
	if _, err := fmt.Sscan(string(stat), &server); err != nil {
		b.Fatal(err)
	}
	return own + time.Duration(server)
}

// start begins a timed section: b's timer and the clock.
func (c *cpuClock) start(b *testing.B) {
	b.StartTimer()
	c.began = c.now(b)
}

// stop ends a timed section.
func (c *cpuClock) stop(b *testing.B) {
	c.spent += c.now(b) - c.began
	b.StopTimer()
}

// report reports the CPU time per op, and per row of rows an op.
func (c *cpuClock) report(b *testing.B, rows int) {
	b.ReportMetric(float64(c.spent.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(c.spent.Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
}
