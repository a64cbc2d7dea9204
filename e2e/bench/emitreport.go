package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// emitHeader is what the emit part's tables say about the run as a whole.
type emitHeader struct {
	settings, load string
	conns, keys    int
	duration       time.Duration
	relayArgs      []string
	skipped        string // why message ways were not drained
}

// printEmit prints the emit part's three tables: the database's side, the
// outbox table over time, and the relay's drain.
func printEmit(out io.Writer, h emitHeader, rs []emitResult) {
	fmt.Fprintf(out, "### Table or messages: the database's side\n\n")
	fmt.Fprintf(out, "%d connections commit one-event transactions as fast as they go for %s, each way in turn, "+
		"with a slot of the relay's present (created before the load, read after it); each way starts after a CHECKPOINT. "+
		"The event: topic %s, %d keys, the default mapping's three headers, a ~260-byte JSON payload. "+
		"Server: %s. Load average before: %s.\n\n", h.conns, h.duration, benchTopic, h.keys, h.settings, h.load)
	fmt.Fprintf(out, "| the application writes | transactions/s | WAL per event | PostgreSQL CPU per event | outbox table grew by | live / dead tuples after |\n|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(out, "| %s | %.0f | %.0f B | %.1f µs | %s | %d / %d |\n", r.way.name, rate(r.load.events, r.load.elapsed),
			perEventBytes(r.load.walBytes, r.load.events), perEvent(r.load.pgCPU, r.load.events),
			size(r.afterRun.size-r.before.size), r.afterRun.live, r.afterRun.dead)
	}
	fmt.Fprintf(out, "\nPostgreSQL CPU is the load's backends and PostgreSQL's background processes over the load (autovacuum's workers, started later, are not counted). "+
		"WAL per event is the insert position's advance over the load divided by the events.\n\n")
	printWALKinds(out, rs)
	for _, r := range rs {
		if r.way.table {
			printOutboxOverTime(out, r)
		}
	}
	printEmitDrain(out, h, rs)
}

// printWALKinds prints each way's WAL per event by kind, when
// pg_walinspect could read it.
func printWALKinds(out io.Writer, rs []emitResult) {
	perKind := make([]map[string]float64, len(rs))
	for i, r := range rs {
		if r.walKinds == nil {
			return
		}
		perKind[i] = map[string]float64{}
		for k, n := range r.walKinds {
			perKind[i][k] = perEventBytes(n, r.load.events)
		}
	}
	kinds := walColumns(perKind)
	fmt.Fprintf(out, "The load's WAL per event by kind (pg_walinspect's resource managers; bytes of the records, full-page images included):\n\n")
	fmt.Fprintf(out, "| the application writes | %s |\n|---|%s\n", strings.Join(kinds, " | "), strings.Repeat("---|", len(kinds)))
	for i, r := range rs {
		cells := make([]string, len(kinds))
		for j, k := range kinds {
			cells[j] = fmt.Sprintf("%.0f B", perKind[i][k])
		}
		fmt.Fprintf(out, "| %s | %s |\n", r.way.name, strings.Join(cells, " | "))
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

// printEmitDrain prints the relay's drain of each way's events.
func printEmitDrain(out io.Writer, h emitHeader, rs []emitResult) {
	args := "`cdc-relay run` with its defaults"
	if len(h.relayArgs) > 0 {
		args = "`cdc-relay run " + strings.Join(h.relayArgs, " ") + "` (the same for every way)"
	}
	fmt.Fprintf(out, "### Table or messages: the relay's drain\n\n")
	fmt.Fprintf(out, "The events each load wrote, drained by %s started once the load was over, into kfake (discarding record bytes); "+
		"time from starting the relay until Kafka acked every event; CPU is the relay process's.\n\n", args)
	fmt.Fprintf(out, "| the application wrote | events | time | events/s | relay CPU per event | peak RSS |\n|---|---|---|---|---|---|\n")
	for _, r := range rs {
		if r.drain == nil {
			fmt.Fprintf(out, "| %s | %d | not drained: %s | | | |\n", r.way.name, r.load.events, r.relaySkipped)
			continue
		}
		d := *r.drain
		fmt.Fprintf(out, "| %s | %d | %s | %.0f | %.2f µs | %.1f MiB |\n", r.way.name, r.load.events, d.wall.Round(time.Millisecond),
			rate(r.load.events, d.wall), perEvent(d.cpu, r.load.events), float64(d.peakRSS)/(1<<20))
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
