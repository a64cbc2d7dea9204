package republish

import (
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// TestWindowOnLocalTime: a row written at the window's start, or after,
// by a session in any time zone, into a timestamp column without one, is
// in the window.
func TestWindowOnLocalTime(t *testing.T) {
	since := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	where, arg, ok := windowOn(`"created_at"`, noTimeZone, since, decoder.UnitUnset, nil)
	if !ok || where != `"created_at" >= $1::timestamp` {
		t.Fatalf("windowOn = %q, %v", where, ok)
	}
	bound, err := time.Parse("2006-01-02 15:04:05.999999", string(arg))
	if err != nil {
		t.Fatal(err)
	}
	// The zones furthest west and east, and one between with its summer
	// time.
	for _, zone := range []string{"Etc/GMT+12", "America/New_York", "UTC", "Asia/Kolkata", "Pacific/Kiritimati"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Skipf("no time zone data: %v", err)
		}
		for _, written := range []time.Time{since, since.Add(time.Second), since.AddDate(0, 6, 0)} {
			wall := written.In(loc)
			// The column holds the wall time, read as if in UTC.
			col := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
			if col.Before(bound) {
				t.Errorf("a row written at %s in %s holds %s, before the window's %s", written, zone, col, bound)
			}
		}
	}
	// The table's zone known: the wall time there two hours before since,
	// so that a row written after since when the clocks went back (New
	// York, 1 November 2026: 01:59 EDT, then 01:00 EST) is in the window.
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	if where, arg, ok := windowOn(`"created_at"`, noTimeZone, since, decoder.UnitUnset, ny); !ok || where != `"created_at" >= $1::timestamp` || string(arg) != "2026-11-24 01:00:00" {
		t.Errorf("in New York: %q %q %v; want the wall time there two hours before since, 01:00", where, arg, ok)
	}
	fallBack := time.Date(2026, 11, 1, 5, 40, 0, 0, time.UTC) // 01:40 EDT
	_, arg, _ = windowOn(`"created_at"`, noTimeZone, fallBack, decoder.UnitUnset, ny)
	written := fallBack.Add(30 * time.Minute).In(ny) // 01:10 EST
	if wall := written.Format("2006-01-02 15:04:05"); wall < string(arg) {
		t.Errorf("a row written at %s, after the window's start, holds %s, before its bound %s", written, wall, arg)
	}
	if where, arg, ok := windowOn(`"created_at"`, "timestamp with time zone", since, decoder.UnitUnset, nil); !ok || where != `"created_at" >= $1::timestamptz` || string(arg) != "2026-11-24T08:00:00Z" {
		t.Errorf("timestamptz: %q %q %v; want the instant itself", where, arg, ok)
	}
	if _, _, ok := windowOn(`"created_at"`, "date", since, decoder.UnitUnset, nil); ok {
		t.Error("a date column accepted")
	}
	// A bigint column compares in its unit.
	for unit, want := range map[decoder.TimestampUnit]string{decoder.UnitSeconds: "1795507200", decoder.UnitMillis: "1795507200000", decoder.UnitMicros: "1795507200000000"} {
		if where, arg, ok := windowOn(`"at"`, "bigint", since, unit, nil); !ok || where != `"at" >= $1::bigint` || string(arg) != want {
			t.Errorf("bigint in %s: %q %q %v; want %s", unit, where, arg, ok, want)
		}
	}
}

// TestWindowPredicate: the window's condition as SQL of no argument: its
// time a quoted literal in place of $1, a column whose name holds $1
// left as it is.
func TestWindowPredicate(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	for typ, want := range map[string]string{
		"timestamp with time zone": `"a$1" >= '2026-01-02T03:04:05.000006Z'::timestamptz`,
		"bigint":                   `"a$1" >= '1767323045000'::bigint`,
	} {
		where, arg, ok := windowOn(`"a$1"`, typ, since, decoder.UnitMillis, nil)
		if !ok {
			t.Fatal(typ)
		}
		if got := (&Window{where: where, since: arg}).Predicate(); got != want {
			t.Errorf("%s: %s, want %s", typ, got, want)
		}
	}
}
