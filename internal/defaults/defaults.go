package defaults

import "log/slog"

// Number is a numeric field a default can fill: counts, sizes and
// durations (time.Duration is an int64).
type Number interface {
	~int | ~int32 | ~int64 | ~float64
}

// Positive sets *v to d when *v is zero or below, and leaves it otherwise.
func Positive[T Number](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Zero sets *v to d when *v is its type's zero value (such as the empty
// string), and leaves it otherwise.
func Zero[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Logger sets *l to a logger that discards everything when *l is nil, so
// that a nil Logger in a configuration means "log nothing".
func Logger(l **slog.Logger) {
	if *l == nil {
		*l = slog.New(slog.DiscardHandler)
	}
}
