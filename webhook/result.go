package webhook

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Outcome is what an answer means for the events of a request.
type Outcome uint8

const (
	// Delivered is a 2xx answer: the receiver took the events.
	Delivered Outcome = iota + 1
	// Retry is a failure that a later attempt may not meet: a 5xx, 408
	// or 429 answer, or none (a timeout, a refused or reset connection, a
	// name that does not resolve, a TLS handshake that fails). A failed
	// handshake is the receiver's or the configuration's, never the
	// event's: once either is fixed, the events go through.
	Retry
	// Refused is any other answer: a 4xx (the receiver refuses these
	// events; sending them again changes nothing), a 3xx (redirects are
	// not followed: the URL is to be changed) or a status outside 100 to
	// 599; and a request that cannot be made from the events (an id that
	// cannot be a header's value).
	Refused
)

// String is "delivered", "retry" or "refused".
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Refused:
		return "refused"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Result is what the receiver answered to one request.
type Result struct {
	// Outcome is the answer's meaning.
	Outcome Outcome
	// Status is the HTTP status code, or 0 when no answer came.
	Status int
	// RetryAfter is the wait the receiver asked for in Retry-After
	// (seconds or an HTTP date), at most [MaxRetryAfter]; 0 when it asked
	// for none. It is read from every answer that is not a 2xx.
	RetryAfter time.Duration
	// Err says why the events were not delivered, in a line short enough
	// for the status table: the status and the first bytes of the answer's
	// body, or the transport's error; it wraps that error (errors.As finds
	// an x509 or net error; errors.Is the caller's context.Canceled). Nil
	// when delivered. It never shows the secret, the URL's user
	// information or query string, or a static header's value.
	Err error
	// Latency is the time from sending the request to reading the answer.
	Latency time.Duration
	// Omitted are the names (as the event had them) of the mapped headers
	// that were left out of the request, since they cannot be sent as HTTP
	// headers (see the package's doc); nil when none.
	Omitted []string
}

// classes are the classes of a request, every value [Result.Class]
// returns but "": a fixed set, which metrics.WebhookClasses lists.
var classes = []string{"2xx", "3xx", "4xx", "5xx", "timeout", "connection", "other"}

// Class is the class of the request r is the result of, one of a fixed set:
// "2xx", "3xx", "4xx" or "5xx" by the answer's status; "timeout" when no
// answer came within the timeout; "connection" when none came for
// another reason (a connection refused or reset, a name that does not
// resolve, a TLS handshake that fails); "other" for a status outside 200
// to 599. It is "" for a request that was never sent (it could not be
// made from the events) and for one the caller stopped (its context was
// canceled): neither says anything of the receiver.
func (r Result) Class() string {
	switch {
	case r.Status >= 200 && r.Status <= 599:
		return classes[r.Status/100-2]
	case r.Status != 0:
		return "other"
	case r.Outcome != Retry || errors.Is(r.Err, context.Canceled):
		return ""
	}
	var ne net.Error
	if errors.Is(r.Err, context.DeadlineExceeded) || errors.As(r.Err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "connection"
}

// classify is the outcome of status.
func classify(status int) Outcome {
	switch {
	case status >= 200 && status <= 299:
		return Delivered
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500 && status <= 599:
		return Retry
	}
	return Refused
}

// The waits of [Backoff]: the first, the longest by doubling, and the
// longest a Retry-After is honoured for.
const (
	BackoffBase   = time.Second
	BackoffMax    = 5 * time.Minute
	MaxRetryAfter = 15 * time.Minute
)

// Backoff is the wait before attempt+1, after attempt failed attempts (1
// for the first): BackoffBase doubled attempt-1 times, at most BackoffMax,
// jittered by ±20% so that events that failed together are not sent
// together again; or, when longer, retryAfter (capped at MaxRetryAfter)
// plus up to 10% more, never less than the receiver asked for.
func Backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := BackoffBase
	for i := 1; i < attempt && d < BackoffMax; i++ {
		d *= 2
	}
	d = min(d, BackoffMax)
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	if ra := min(retryAfter, MaxRetryAfter); ra > d {
		d = ra + time.Duration(float64(ra)*0.1*rand.Float64())
	}
	return d
}

// parseRetryAfter reads a Retry-After header's value at now: a number of
// seconds or an HTTP date, as a wait from 0 to MaxRetryAfter; 0 for an
// empty value, one it cannot read, or a time past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}
