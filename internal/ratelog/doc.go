// Package ratelog logs lines by key at a bounded rate, so that a burst of
// the same failure gives two lines, not one per event.
//
// The first line of a key is logged at once, and opens the key's interval.
// The key's later lines in the interval are not logged: they are counted,
// and the attributes the Logger is told to keep are kept from the first
// and the latest of them. Once the interval has passed, the key's next
// line, or [Logger.Flush], logs one summary line with the count and those
// attributes; the next line is logged and opens a new interval. A key
// with no line held back gets no summary.
//
// [Logger.Hold] counts a held-back line without its attributes, for a
// caller on a hot path that builds a line only when it will be logged.
//
// A Logger is safe for concurrent use, and logs outside its lock.
package ratelog
