package main

import (
	"errors"
	"flag"
	"strconv"
	"strings"
	"time"
)

// durationValue is a time.Duration flag whose errors say what is wrong
// ("30" lacks a unit) instead of the flag package's "parse error".
type durationValue time.Duration

// durationVar defines a duration flag; negative durations are refused.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(strings.TrimSpace(s))
	if err != nil {
		if _, numErr := strconv.ParseFloat(strings.TrimSpace(s), 64); numErr == nil {
			return errors.New("a duration needs a unit, such as 30s or 500ms")
		}
		return errors.New("not a duration: want a number and a unit, such as 30s, 500ms or 1m30s")
	}
	if v < 0 {
		return errors.New("a duration cannot be negative")
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return formatDuration(time.Duration(*d)) }

// parseDuration is time.ParseDuration with days: "7d", "1d12h".
func parseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseUint(days, 10, 16)
	if err != nil {
		return time.ParseDuration(s) // for its error
	}
	v := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, err
		}
		v += r
	}
	return v, nil
}

// formatDuration writes whole days as days: 7d, not 168h0m0s.
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// Get makes durationValue a flag.Getter, as the flag package's own values are.
func (d *durationValue) Get() any { return time.Duration(*d) }
