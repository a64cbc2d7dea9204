package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

// emitHeader is what the emit part's tables say about the run as a whole.
type emitHeader struct {
	settings, load string
	conns, keys    int
	rounds         int
	duration       time.Duration
	relayArgs      []string
}

// printEmit prints the emit part's tables: the database's side, the WAL
// by kind, the outbox table over time, and the relay's drain. runs[i] are
// one way's rounds; with several, a figure is their median (and, for
// rates, their range), a table's state that of the last round.
func printEmit(out io.Writer, h emitHeader, runs [][]emitResult) {
	fmt.Fprintf(out, "### Table or messages: the database's side\n\n")
	fmt.Fprintf(out, "%d connections commit one-event transactions as fast as they go for %s, each way in turn (%d rounds, the order rotating), "+
		"with a slot of the relay's present (created before the load, read after it); each way starts after a CHECKPOINT. "+
		"The event: topic %s, %d keys, the default mapping's three headers, a ~260-byte JSON payload. "+
		"Server: %s. Load average before: %s.\n\n", h.conns, h.duration, h.rounds, benchTopic, h.keys, h.settings, h.load)
	fmt.Fprintf(out, "| the application writes | transactions/s | WAL per event | PostgreSQL CPU per event | machine idle | outbox table per event | live / dead tuples after |\n|---|---|---|---|---|---|---|\n")
	for _, rs := range runs {
		last := rs[len(rs)-1]
		fmt.Fprintf(out, "| %s | %s | %.0f B | %.1f µs | %s | %.0f B | %d / %d |\n", last.way.name,
			spreadOf(rs, func(r emitResult) float64 { return rate(r.load.events, r.load.elapsed) }),
			median(rs, func(r emitResult) float64 { return perEventBytes(r.load.walBytes, r.load.events) }),
			median(rs, func(r emitResult) float64 { return perEvent(r.load.pgCPU, r.load.events) }),
			pct(median(rs, func(r emitResult) float64 { return r.load.idle })),
			median(rs, func(r emitResult) float64 { return perEventBytes(r.afterRun.size-r.before.size, r.load.events) }),
			last.afterRun.live, last.afterRun.dead)
	}
	fmt.Fprintf(out, "\nPostgreSQL CPU is the load's backends and PostgreSQL's background processes over the load (autovacuum's workers, started later, are not counted); "+
		"machine idle is the idle time of all %d cores over the load, in %% of one core (0%%: the load saturates the machine). "+
		"WAL per event is the insert position's advance over the load divided by the events; the table per event, its growth (heap + indexes) divided by the events. "+
		"Live and dead tuples are the statistics' n_live_tup and n_dead_tup: an ANALYZE by autovacuum during the load replaces the live count with its estimate.\n\n", runtime.NumCPU())
	printWALKinds(out, runs)
	for _, rs := range runs {
		if last := rs[len(rs)-1]; last.way.table {
			printOutboxOverTime(out, last)
		}
	}
	printEmitDrain(out, h, runs)
}

// spreadOf is the median of f over rs, with the range when there are
// several: "11832 (11673–12040)".
func spreadOf(rs []emitResult, f func(emitResult) float64) string {
	v := collect(rs, f)
	med := fmt.Sprintf("%.0f", median(v, func(x float64) float64 { return x }))
	if len(v) == 1 {
		return med
	}
	return fmt.Sprintf("%s (%.0f–%.0f)", med, slices.Min(v), slices.Max(v))
}

// printWALKinds prints each way's WAL per event by kind (the median of
// the rounds pg_walinspect could read), when it could read some.
func printWALKinds(out io.Writer, runs [][]emitResult) {
	perKind := make([]map[string]float64, len(runs))
	for i, rs := range runs {
		rs = slices.DeleteFunc(slices.Clone(rs), func(r emitResult) bool { return r.walKinds == nil })
		if len(rs) == 0 {
			return
		}
		perKind[i] = map[string]float64{}
		for _, r := range rs {
			for k := range r.walKinds {
				perKind[i][k] = median(rs, func(r emitResult) float64 { return perEventBytes(r.walKinds[k], r.load.events) })
			}
		}
	}
	kinds := walColumns(perKind)
	fmt.Fprintf(out, "The load's WAL per event by kind (pg_walinspect's resource managers; bytes of the records, full-page images included):\n\n")
	fmt.Fprintf(out, "| the application writes | %s |\n|---|%s\n", strings.Join(kinds, " | "), strings.Repeat("---|", len(kinds)))
	for i, rs := range runs {
		cells := make([]string, len(kinds))
		for j, k := range kinds {
			cells[j] = fmt.Sprintf("%.0f B", perKind[i][k])
		}
		fmt.Fprintf(out, "| %s | %s |\n", rs[0].way.name, strings.Join(cells, " | "))
	}
	fmt.Fprintln(out)
}

// walColumns are the kinds of WAL that come to at least one byte per
// event in some run, the largest first (by their largest figure; ties by
// name).
func walColumns(perKind []map[string]float64) []string {
	largest := map[string]float64{}
	for _, m := range perKind {
		for k, v := range m {
			largest[k] = max(largest[k], v)
		}
	}
	var kinds []string
	for k, v := range largest {
		if v >= 1 {
			kinds = append(kinds, k)
		}
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if c := cmp.Compare(largest[b], largest[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return kinds
}

// printOutboxOverTime prints what the table costs after the run, after
// retention's delete and after VACUUM.
func printOutboxOverTime(out io.Writer, r emitResult) {
	n := r.load.events
	fmt.Fprintf(out, "### Table or messages: the outbox table after %d events, until it is vacuumed\n\n", n)
	fmt.Fprintf(out, "Once the relay has delivered them, the rows are deleted as retention deletes them "+
		"(batches of 10,000 by created_at, each in its own transaction), then a manual VACUUM; autovacuum on as the server says. "+
		"Messages leave none of this behind.\n\n")
	fmt.Fprintf(out, "| | outbox table (heap + indexes) | heap | live / dead tuples | WAL written | WAL per event |\n|---|---|---|---|---|---|\n")
	row := func(name string, c tableCost, wal int64) {
		fmt.Fprintf(out, "| %s | %s | %s | %d / %d | %s | %.0f B |\n", name, size(c.size), size(c.heap), c.live, c.dead,
			size(wal), perEventBytes(wal, n))
	}
	row("after the load", r.afterRun, r.load.walBytes)
	row("after the delete", r.afterDelete, r.deleteWAL)
	row("after VACUUM", r.afterVacuum, r.vacuumWAL)
	fmt.Fprintf(out, "\nIn all, the table's way wrote %.0f bytes of WAL per event from INSERT to VACUUM.\n\n",
		perEventBytes(r.load.walBytes+r.deleteWAL+r.vacuumWAL, n))
}

// printEmitDrain prints the relay's drain of each way's events: the
// medians of the rounds, the rate's range.
func printEmitDrain(out io.Writer, h emitHeader, runs [][]emitResult) {
	args := "`cdc-relay run` with its defaults"
	if len(h.relayArgs) > 0 {
		args = "`cdc-relay run " + strings.Join(h.relayArgs, " ") + "` (the same for every way)"
	}
	fmt.Fprintf(out, "### Table or messages: the relay's drain\n\n")
	fmt.Fprintf(out, "The events each load wrote, drained by %s started once the load was over, into kfake (discarding record bytes); "+
		"time from starting the relay until Kafka acked every event; CPU is the relay process's.\n\n", args)
	fmt.Fprintf(out, "| the application wrote | events | time | events/s | relay CPU per event | peak RSS |\n|---|---|---|---|---|---|\n")
	for _, rs := range runs {
		name, events := rs[0].way.name, median(rs, func(r emitResult) float64 { return float64(r.load.events) })
		if rs[0].drain == nil {
			fmt.Fprintf(out, "| %s | %.0f | not drained: %s | | | |\n", name, events, rs[0].relaySkipped)
			continue
		}
		wall := time.Duration(median(rs, func(r emitResult) float64 { return float64(r.drain.wall) }))
		fmt.Fprintf(out, "| %s | %.0f | %s | %s | %.2f µs | %.1f MiB |\n", name, events, wall.Round(time.Millisecond),
			spreadOf(rs, func(r emitResult) float64 { return rate(r.load.events, r.drain.wall) }),
			median(rs, func(r emitResult) float64 { return perEvent(r.drain.cpu, r.load.events) }),
			median(rs, func(r emitResult) float64 { return float64(r.drain.peakRSS) })/(1<<20))
	}
	fmt.Fprintln(out)
}

// drainLine is a way's drain for the log.
func drainLine(r emitResult) string {
	if r.drain == nil {
		return "skipped (" + r.relaySkipped + ")"
	}
	return fmt.Sprintf("%s (%.0f/s, %.2f µs CPU/event)", r.drain.wall.Round(time.Millisecond),
		rate(r.load.events, r.drain.wall), perEvent(r.drain.cpu, r.load.events))
}

// perEventBytes is bytes divided by events, 0 for no events.
func perEventBytes(bytes int64, events int) float64 {
	if events == 0 {
		return 0
	}
	return float64(bytes) / float64(events)
}

// size is a byte count as people read it: "0 B", "512 B", "8.0 KiB",
// "123.4 MiB", "1.5 GiB".
func size(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if v < unit && v > -unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
