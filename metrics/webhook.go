package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// WebhookClasses are the classes of WebhookRequests: the answer's status
// class, timeout (no answer within the publisher's timeout), connection
// (no answer for another reason) and other (a status outside 200 to
// 599), as the webhook package's Result.Class names them. Each is served
// from a publisher's first reading, at 0.
var WebhookClasses = []string{"2xx", "3xx", "4xx", "5xx", "timeout", "connection", "other"}

// WebhookParkReasons are the reasons of WebhookParked, as the lanes
// (package relay/delivery/lanes) name them: refused, failed (for the
// retries in place), not_sent (during the receiver's outage), slow (it
// waited in its lane too long: a receiver slower than the load). Each is
// served from a publisher's first reading, at 0.
var WebhookParkReasons = []string{"refused", "failed", "not_sent", "slow"}

// newWebhook makes m's webhook publishers' metrics with f.
func (m *Metrics) newWebhook(f factory) {
	m.WebhookRequests = f.counterVec("cdc_relay_webhook_requests_total",
		"Requests sent to a webhook publisher's receiver, by publisher and class: 2xx, 3xx, 4xx, 5xx (the answer's status), "+
			"timeout (no answer within the publisher's timeout), connection (no answer: a connection refused or reset, a name that "+
			"does not resolve, a TLS handshake that failed), other (a status outside 200 to 599). Each try in place is a request.",
		"publisher", "class")
	m.WebhookRequestDuration = f.histogramVec("cdc_relay_webhook_request_duration_seconds",
		"Time from sending a request to a webhook publisher's receiver to its answer, or to the timeout, by publisher: "+
			"one observation per request of cdc_relay_webhook_requests_total.",
		WebhookRequestBuckets, "publisher")
	m.WebhookRetries = f.counterVec("cdc_relay_webhook_retries_total",
		"Requests to a webhook publisher's receiver tried again in place, with backoff, after a 5xx, 408 or 429 answer, "+
			"a timeout or a connection failure, by publisher.",
		"publisher")
	m.WebhookParked = f.counterVec("cdc_relay_webhook_events_parked_total",
		"Events the stream handed a webhook publisher that its lanes gave back to be parked for that publisher (its poller "+
			"sends them later), by publisher and reason: refused (a 4xx or a 3xx; DEAD after the attempts), failed (the receiver "+
			"failed through the retries in place), not_sent (the receiver was failing: not sent), slow (it waited in its lane for 5 s, "+
			"or 1 s while the lanes held their share of the in-flight limits: the receiver answers more slowly than the events arrive). Also in "+
			"cdc_relay_events_parked_total, without the publisher.",
		"publisher", "reason")
	m.WebhookFailing = f.gaugeVec("cdc_relay_webhook_receiver_failing",
		"1 while a webhook publisher's receiver is failing: a request failed through its retries in place and none has been "+
			"answered since, so the publisher's new events are parked unsent (but for a probe a second) and its poller sends "+
			"them once it answers; else 0, and 0 on a relay that does not lead. By publisher.",
		"publisher")
}

// WebhookPublisher is one webhook publisher's metrics, as its lanes'
// observer (lanes.Observer). Safe for concurrent use.
type WebhookPublisher struct {
	requests map[string]prometheus.Counter // by class
	m        *Metrics
	name     string
	duration prometheus.Observer
	retries  prometheus.Counter
	parked   map[string]prometheus.Counter // by reason
	failing  prometheus.Gauge
}

// Webhook returns the metrics of the webhook publisher name, and serves
// its series from now on: a requests and a parked series of every known
// class and reason at 0, its retries at 0, the failing gauge at 0 (unless
// it was set), its latency histogram empty. Calling it again for a name
// is harmless: the series are the same.
func (m *Metrics) Webhook(name string) *WebhookPublisher {
	w := &WebhookPublisher{
		m: m, name: name,
		requests: make(map[string]prometheus.Counter, len(WebhookClasses)),
		parked:   make(map[string]prometheus.Counter, len(WebhookParkReasons)),
		duration: m.WebhookRequestDuration.WithLabelValues(name),
		retries:  m.WebhookRetries.WithLabelValues(name),
		failing:  m.WebhookFailing.WithLabelValues(name),
	}
	for _, c := range WebhookClasses {
		w.requests[c] = m.WebhookRequests.WithLabelValues(name, c)
	}
	for _, r := range WebhookParkReasons {
		w.parked[r] = m.WebhookParked.WithLabelValues(name, r)
	}
	return w
}

// Request counts a request of class (one of WebhookClasses; another
// starts a series of its own) that took latency.
func (w *WebhookPublisher) Request(class string, latency time.Duration) {
	c, ok := w.requests[class]
	if !ok {
		c = w.m.WebhookRequests.WithLabelValues(w.name, class)
	}
	c.Inc()
	w.duration.Observe(latency.Seconds())
}

// Retried counts a request tried again in place.
func (w *WebhookPublisher) Retried() { w.retries.Inc() }

// Parked counts n events given back to be parked, for reason (one of
// WebhookParkReasons; another starts a series of its own).
func (w *WebhookPublisher) Parked(reason string, n int) {
	c, ok := w.parked[reason]
	if !ok {
		c = w.m.WebhookParked.WithLabelValues(w.name, reason)
	}
	c.Add(float64(n))
}

// Failing sets the failing gauge: 1 while failing, else 0.
func (w *WebhookPublisher) Failing(failing bool) {
	v := 0.0
	if failing {
		v = 1
	}
	w.failing.Set(v)
}
