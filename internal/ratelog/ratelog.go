package ratelog

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config says how often a Logger logs a key's lines and what its summary
// lines say.
type Config struct {
	// Every is a key's interval: after a line of the key is logged, the
	// key's lines are held back until Every has passed. Zero logs every
	// line.
	Every time.Duration
	// Summary is the message of a summary line.
	Summary string
	// KeyAttr, if set, is the attribute that carries the key on a summary
	// line.
	KeyAttr string
	// CountAttr is the attribute that carries how many lines were held
	// back; "" is "lines".
	CountAttr string
	// First and Last name attributes of the lines held back (as given to
	// Log) that the summary repeats: those of the first line held back as
	// "first_" + name, those of the latest as "last_" + name. An attribute
	// a line lacks is left out; an error is kept as its text.
	First, Last []string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Logger logs lines by key, at most one line per key per interval and a
// summary of the rest. Create it with [New].
type Logger struct {
	log         *slog.Logger
	cfg         Config
	first, last []kept // cfg.First and cfg.Last, with their summary names

	mu   sync.Mutex
	keys map[string]*window
}

// kept is an attribute a summary repeats: name on the lines, as on the
// summary.
type kept struct{ name, as string }

// window is one key's current interval.
type window struct {
	start       time.Time // when the line that opened it was logged
	held        int       // lines held back since
	level       slog.Level
	first, last []slog.Attr // kept from the first and latest held back
}

// New returns a Logger that logs to log as cfg says.
func New(log *slog.Logger, cfg Config) *Logger {
	if cfg.CountAttr == "" {
		cfg.CountAttr = "lines"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Logger{log: log, cfg: cfg, keys: map[string]*window{}}
	for _, name := range cfg.First {
		l.first = append(l.first, kept{name, "first_" + name})
	}
	for _, name := range cfg.Last {
		l.last = append(l.last, kept{name, "last_" + name})
	}
	return l
}

// Log logs msg at level with args (as [slog.Logger.Log] takes them) when
// it is the first line of key in an interval, after the summary of the
// interval before if that held lines back, and reports true. Otherwise it
// counts the line, keeps the attributes the summary repeats, and reports
// false.
func (l *Logger) Log(key string, level slog.Level, msg string, args ...any) bool {
	now := l.cfg.Now()
	l.mu.Lock()
	w := l.keys[key]
	if w != nil && now.Sub(w.start) < l.cfg.Every {
		w.held++
		w.level = level
		if w.held == 1 {
			w.first = appendKept(w.first[:0], l.first, args)
		}
		w.last = appendKept(w.last[:0], l.last, args)
		l.mu.Unlock()
		return false
	}
	var ended window
	if w == nil {
		w = &window{}
		l.keys[key] = w
	} else {
		ended = *w
	}
	*w = window{start: now}
	l.mu.Unlock()
	l.summarize(key, &ended)
	l.log.Log(context.Background(), level, msg, args...)
	return true
}

// Hold counts a line of key at level and reports true when the key's
// interval holds lines back, as Log would; it reports false, counting
// nothing, when the line must be logged. A caller on a hot path asks Hold
// first and builds the line for Log only when it reports false. The
// summary keeps no attributes of the lines Hold counted.
func (l *Logger) Hold(key string, level slog.Level) bool {
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[key]
	if w == nil || now.Sub(w.start) >= l.cfg.Every {
		return false
	}
	w.held++
	w.level = level
	return true
}

// Flush logs the summaries of the intervals that have passed, in the
// order of their keys, and forgets those keys: their next line is logged
// at once. Call it now and then, so that a burst that stopped is still
// reported.
func (l *Logger) Flush() {
	type keyed struct {
		key string
		w   window
	}
	now := l.cfg.Now()
	var ended []keyed
	l.mu.Lock()
	for key, w := range l.keys {
		if now.Sub(w.start) >= l.cfg.Every {
			ended = append(ended, keyed{key, *w})
			delete(l.keys, key)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(ended, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range ended {
		l.summarize(ended[i].key, &ended[i].w)
	}
}

// summarize logs w's summary line, if w held lines back.
func (l *Logger) summarize(key string, w *window) {
	if w.held == 0 {
		return
	}
	args := make([]any, 0, 6+len(w.first)+len(w.last))
	if l.cfg.KeyAttr != "" {
		args = append(args, l.cfg.KeyAttr, key)
	}
	args = append(args, l.cfg.CountAttr, w.held, "since", w.start.Format(time.RFC3339))
	for _, a := range w.first {
		args = append(args, a)
	}
	for _, a := range w.last {
		args = append(args, a)
	}
	l.log.Log(context.Background(), w.level, l.cfg.Summary, args...)
}

// appendKept appends to attrs the attributes of args that keep names, under
// their summary names.
func appendKept(attrs []slog.Attr, keep []kept, args []any) []slog.Attr {
	for _, k := range keep {
		if v, ok := find(args, k.name); ok {
			if err, isErr := v.(error); isErr {
				v = err.Error()
			}
			attrs = append(attrs, slog.Any(k.as, v))
		}
	}
	return attrs
}

// find returns the value of attribute name among args, which are as
// slog.Logger.Log takes them: key-value pairs and slog.Attrs.
func find(args []any, name string) (any, bool) {
	for i := 0; i < len(args); i++ {
		switch a := args[i].(type) {
		case slog.Attr:
			if a.Key == name {
				return a.Value.Any(), true
			}
		case string:
			if i+1 < len(args) && a == name {
				return args[i+1], true
			}
			i++ // the value
		}
	}
	return nil, false
}
