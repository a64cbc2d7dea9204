package decoder

import (
	"fmt"
	"time"
)

// TimestampUnit is the unit of a bigint timestamp column: the time since
// the Unix epoch in seconds, milliseconds or microseconds. The zero value
// is unset: the unit is judged from each value's magnitude (JudgeUnit).
type TimestampUnit string

// The units of a bigint timestamp column.
const (
	UnitUnset   TimestampUnit = ""
	UnitSeconds TimestampUnit = "s"
	UnitMillis  TimestampUnit = "ms"
	UnitMicros  TimestampUnit = "us"
)

// ParseTimestampUnit reads s, one of s, ms, us or "" (unset).
func ParseTimestampUnit(s string) (TimestampUnit, error) {
	switch u := TimestampUnit(s); u {
	case UnitUnset, UnitSeconds, UnitMillis, UnitMicros:
		return u, nil
	}
	return UnitUnset, fmt.Errorf("timestamp unit %q: want s, ms or us (epoch seconds, milliseconds or microseconds)", s)
}

// The magnitudes JudgeUnit reads: an epoch time in seconds from
// 2001-09-09 (1e9) up to the year 5138 (1e11); in milliseconds from
// 1973-03-03 (1e11) up to 5138 (1e14); in microseconds from 1973 (1e14)
// up to 5138 (1e17). The ranges do not overlap, so each value in them
// reads one way only.
const (
	minSeconds = 1e9
	minMillis  = 1e11
	minMicros  = 1e14
	maxMicros  = 1e17
)

// JudgeUnit returns the unit in which v is a time from 2001 (seconds) or
// 1973 (milliseconds, microseconds) to the year 5138, and false for a
// value that is none of them (below 1e9, negative, or 1e17 and above):
// ambiguous, its unit must be given.
func JudgeUnit(v int64) (TimestampUnit, bool) {
	switch {
	case v >= minSeconds && v < minMillis:
		return UnitSeconds, true
	case v >= minMillis && v < minMicros:
		return UnitMillis, true
	case v >= minMicros && v < maxMicros:
		return UnitMicros, true
	}
	return UnitUnset, false
}

// JudgeUnits returns the unit of a column whose oldest and newest values
// are oldest and newest (JudgeUnit of each), and false when either is
// ambiguous or they disagree: its unit must be given.
func JudgeUnits(oldest, newest int64) (TimestampUnit, bool) {
	a, okA := JudgeUnit(oldest)
	b, okB := JudgeUnit(newest)
	if !okA || !okB || a != b {
		return UnitUnset, false
	}
	return b, true
}

// Time is the instant v means in unit u; an unset u judges v's unit
// (JudgeUnit), and reads an ambiguous v as milliseconds.
func (u TimestampUnit) Time(v int64) time.Time {
	if u == UnitUnset {
		u, _ = JudgeUnit(v)
	}
	switch u {
	case UnitSeconds:
		return time.Unix(v, 0)
	case UnitMicros:
		return time.UnixMicro(v)
	}
	return time.UnixMilli(v)
}

// Epoch is t in unit u, rounded down; unset is milliseconds.
func (u TimestampUnit) Epoch(t time.Time) int64 {
	switch u {
	case UnitSeconds:
		return t.Unix()
	case UnitMicros:
		return t.UnixMicro()
	}
	return t.UnixMilli()
}
