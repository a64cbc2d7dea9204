package metrics

import "sync"

// MaxLabelValues is how many values of a label a database user chooses
// (the prefix of a logical decoding message, which any role may write)
// get a series of their own; the later ones share [OtherLabel].
const MaxLabelValues = 64

// OtherLabel is the label value of every value past the first
// [MaxLabelValues] of a [LabelBound].
const OtherLabel = "other"

// LabelBound bounds the values of a label: the first max distinct values
// it is given are their own label, every later one is [OtherLabel], so
// that the series of a metric, and the memory and /metrics they take,
// stay bounded whatever a database user writes. Safe for concurrent use.
type LabelBound struct {
	max  int
	mu   sync.Mutex
	seen map[string]struct{}
}

// NewLabelBound returns a LabelBound that keeps the first max values.
func NewLabelBound(max int) *LabelBound {
	return &LabelBound{max: max, seen: make(map[string]struct{}, max)}
}

// Label returns the label of value: value itself when it is one of the
// first max distinct values given, else [OtherLabel]. A value once given
// its own label keeps it.
func (b *LabelBound) Label(value string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[value]; ok {
		return value
	}
	if len(b.seen) >= b.max {
		return OtherLabel
	}
	b.seen[value] = struct{}{}
	return value
}
