// Package defaults fills the fields of a configuration left unset, one
// field per call, so that each package's withDefaults reads as the list of
// its defaults:
//
//	defaults.Positive(&c.Interval, d.Interval)
//	defaults.Logger(&c.Logger)
//
// Each function changes the field only when it is unset (zero or below for
// numbers and durations, the zero value otherwise, nil for a logger) and
// never touches a field that is set.
package defaults
