package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// commitToAckMetric is the relay's histogram of the time from an event's
// commit in PostgreSQL to Kafka's acknowledgement.
const commitToAckMetric = "cdc_relay_commit_to_ack_seconds"

// histogram is a Prometheus histogram as scraped: its cumulative buckets
// by upper bound, ascending, the last one +Inf.
type histogram []bucket

// bucket is one cumulative bucket: count observations were ≤ le seconds.
type bucket struct {
	le    float64
	count float64
}

// scrapeHistogram reads the histogram name from the Prometheus text
// exposition at url.
func scrapeHistogram(ctx context.Context, url, name string) (histogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	h, err := parseHistogram(resp.Body, name)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return h, nil
}

// parseHistogram reads the buckets of the unlabelled histogram name from
// the Prometheus text format; it fails when there are none or a line is
// malformed.
func parseHistogram(r io.Reader, name string) (histogram, error) {
	var h histogram
	prefix := name + `_bucket{le="`
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		le, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			return nil, fmt.Errorf("malformed bucket line %q", line)
		}
		var b bucket
		var err error
		if le == "+Inf" {
			b.le = math.Inf(1)
		} else if b.le, err = strconv.ParseFloat(le, 64); err != nil {
			return nil, fmt.Errorf("bucket line %q: %w", line, err)
		}
		if b.count, err = strconv.ParseFloat(strings.Fields(value)[0], 64); err != nil {
			return nil, fmt.Errorf("bucket line %q: %w", line, err)
		}
		h = append(h, b)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(h) == 0 || !math.IsInf(h[len(h)-1].le, 1) {
		return nil, fmt.Errorf("no histogram %s with a +Inf bucket", name)
	}
	slices.SortFunc(h, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	return h, nil
}

// sub is h less an earlier scrape of the same histogram: the observations
// made in between.
func (h histogram) sub(earlier histogram) histogram {
	out := slices.Clone(h)
	for i := range out {
		for _, e := range earlier {
			if e.le == out[i].le {
				out[i].count -= e.count
			}
		}
	}
	return out
}

// count is the number of observations.
func (h histogram) count() float64 {
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].count
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linearly within the bucket that holds it, from 0 for the first; in
// the +Inf bucket it is the largest finite bound. Zero without
// observations.
func (h histogram) quantile(q float64) time.Duration {
	total := h.count()
	if total == 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range h {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return seconds(lower)
			}
			if b.count == below {
				return seconds(b.le)
			}
			return seconds(lower + (b.le-lower)*(rank-below)/(b.count-below))
		}
		lower, below = b.le, b.count
	}
	return seconds(lower)
}

// seconds is s seconds, to the nearest nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
