// Package cpuclock measures, for a benchmark, the CPU time its timed
// sections spend in its own process and in the one PostgreSQL backend of
// its pool: on a machine other work shares, wall time varies far more.
// Linux only (/proc/PID/schedstat); for tests and benchmarks.
package cpuclock

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Clock measures the CPU time a benchmark's timed sections spend, in
// the benchmark's process and in its pool's one PostgreSQL backend: on a
// machine other work shares, their wall time varies far more than it.
type Clock struct {
	backend int           // the server process's pid
	spent   time.Duration // the sections' CPU time so far
	began   time.Duration // the CPU time at the section's start
}

// New returns a clock of pool, which must have one connection
// (MaxConns 1): its backend runs every statement.
func New(ctx context.Context, b *testing.B, pool *pgxpool.Pool) *Clock {
	b.Helper()
	var pid int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	return &Clock{backend: pid}
}

// now is the CPU time of the benchmark's process and of the backend.
func (c *Clock) now(b *testing.B) time.Duration {
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

// Start begins a timed section: b's timer and the clock.
func (c *Clock) Start(b *testing.B) {
	b.StartTimer()
	c.began = c.now(b)
}

// Stop ends a timed section.
func (c *Clock) Stop(b *testing.B) {
	c.spent += c.now(b) - c.began
	b.StopTimer()
}

// Report reports the CPU time per op, and per row of rows an op.
func (c *Clock) Report(b *testing.B, rows int) {
	b.ReportMetric(float64(c.spent.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(c.spent.Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
}
