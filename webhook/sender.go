package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Message is one event as a webhook sends it.
type Message struct {
	// ID is the event's id: webhook-id when the event is sent alone, the
	// element's "id" in a batch. It must be a valid header value (no
	// control character) and not empty. The specification asks for ids
	// without '.'; an event's id is the application's, sent as it is.
	ID string
	// Time is when the event happened (the record's timestamp): the
	// element's "timestamp" in a batch; zero leaves it out. It is not
	// webhook-timestamp, which is each attempt's own time.
	Time time.Time
	// Payload is the request's body when the event is sent alone, as it
	// is; nil sends an empty body.
	Payload []byte
	// ContentType is the payload's media type; "" is application/json.
	ContentType string
	// Headers are the event's mapped headers, in order: HTTP headers when
	// the event is sent alone, the element's "headers" in a batch.
	Headers []Header
}

// Header is one of an event's mapped headers (a Kafka record header).
type Header struct {
	Key   string
	Value []byte
}

// defaultContentType is a Message's ContentType when it has none.
const defaultContentType = "application/json"

// maxAnswer is the most bytes of an answer's body read to quote it in an
// error, and maxQuote the most quoted; drainAnswer the most read and
// dropped to keep the connection for the next request.
const (
	maxAnswer   = 4 << 10
	maxQuote    = 200
	drainAnswer = 64 << 10
)

// Sender sends events to one receiver. It is safe for concurrent use.
type Sender struct {
	client  *http.Client
	shown   string // showURL's, for every text
	method  string
	timeout time.Duration
	batch   int
	p       *private // behind a pointer: fmt's %+v of a Sender shows its address only
}

// private is what a Sender never shows.
type private struct {
	url    string // whole, for the requests only
	static http.Header
	secret Secret
	masks  []string // sortMasks's: the strings no text may show
}

// New builds a Sender for cfg, which must be valid ([Config.Validate]),
// signing with secret (not the zero Secret). conns is the most requests
// the caller will have in flight at once: the idle connections kept
// open to the receiver (at least 1). It reads the TLS files and sends
// nothing.
func New(cfg Config, secret Secret, conns int) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if secret.IsZero() {
		return nil, &KeyError{Key: "secret_file", Problem: "no signing secret: set secret_file or secret_env"}
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, &KeyError{Key: "url", Problem: "cannot be read as a URL"}
	}
	s := &Sender{shown: showURL(u), method: cfg.Method, timeout: cfg.Timeout, batch: max(cfg.BatchSize, 1),
		p: &private{url: cfg.URL, secret: secret, static: make(http.Header, len(cfg.Headers))}}
	if s.method == "" {
		s.method = DefaultMethod
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	for name, v := range cfg.Headers {
		s.p.static.Set(name, v)
	}
	s.p.masks = sortMasks(append(append(urlMasks(u), headerMasks(cfg.Headers)...), secret.masks()...))
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: s.timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: s.timeout,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        max(conns, 1),
		MaxIdleConnsPerHost: max(conns, 1),
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	if u.Scheme == "https" {
		if transport.TLSClientConfig, err = cfg.tlsConfig(); err != nil {
			return nil, err
		}
	}
	s.client = &http.Client{
		Transport: transport,
		// A redirect is answered, not followed: see Refused.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return s, nil
}

// BatchSize is the most messages one Send takes: 1 sends each event
// alone.
func (s *Sender) BatchSize() int { return s.batch }

// String is "webhook " and the URL as errors show it.
func (s *Sender) String() string { return "webhook " + s.shown }

// GoString is String, so that %#v shows no secret.
func (s *Sender) GoString() string { return s.String() }

// Close closes the idle connections. The Sender may still send: it
// opens new ones.
func (s *Sender) Close() { s.client.CloseIdleConnections() }

// Send sends msgs in one request and says what the receiver answered. With
// a BatchSize of 1, msgs is one event, sent as its payload; with more,
// msgs (1 to BatchSize events) is sent as a JSON array, one element per
// event, in order:
//
//	{"id": ID, "timestamp": Time (RFC 3339, UTC; left out when zero),
//	 "content_type": ContentType, "headers": {Key: Value, …},
//	 "payload": …}
//
// where payload is the payload itself when ContentType is JSON
// (application/json or a +json type) and the payload valid JSON, a
// JSON string when it is valid UTF-8, null when nil, and otherwise
// "payload_base64" holds its standard base64 instead. A header value is a
// JSON string (invalid UTF-8 replaced by U+FFFD); of a key given twice the
// last value is kept, as a Kafka client's lastHeader. The batch's
// webhook-id is [BatchID]. More messages than BatchSize, or none, is the
// caller's bug: Send panics.
//
// Send returns when the answer is read or the Config's timeout or ctx
// ends; a ctx that ends makes a Retry whose Err wraps ctx's error.
func (s *Sender) Send(ctx context.Context, msgs []Message) Result {
	if len(msgs) == 0 || len(msgs) > s.batch {
		panic(fmt.Sprintf("webhook: Send of %d messages, BatchSize is %d", len(msgs), s.batch))
	}
	body, id, contentType, err := s.body(msgs)
	if err != nil {
		return Result{Outcome: Refused, Err: err}
	}
	// start is taken before the timeout's clock starts, so a request that
	// timed out has a Latency of at least the timeout.
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, s.method, s.p.url, bytes.NewReader(body))
	if err != nil { // the Config was valid: a URL Go cannot request
		return Result{Outcome: Refused, Err: s.errorf(err, "%s %s: %v", s.method, s.shown, err)}
	}
	var omitted []string
	if s.batch == 1 {
		omitted = s.mappedHeaders(req.Header, msgs[0].Headers)
	}
	for name, v := range s.p.static {
		req.Header[name] = v
	}
	ts := start.Unix()
	req.Header["Webhook-Id"] = []string{id}
	req.Header["Webhook-Timestamp"] = []string{strconv.FormatInt(ts, 10)}
	req.Header["Webhook-Signature"] = []string{s.p.secret.signature(id, ts, body)}
	req.Header["Content-Type"] = []string{contentType}
	resp, err := s.client.Do(req)
	if err != nil {
		r := Result{Outcome: Retry, Err: s.transportError(ctx, rctx, err), Latency: time.Since(start)}
		r.Omitted = omitted
		return r
	}
	r := s.answer(resp)
	r.Latency, r.Omitted = time.Since(start), omitted
	return r
}

// body is the request's body, its webhook-id and content type.
func (s *Sender) body(msgs []Message) (body []byte, id, contentType string, err error) {
	for _, m := range msgs {
		if m.ID == "" || !validValue([]byte(m.ID)) {
			return nil, "", "", fmt.Errorf("event id %q cannot be webhook-id: it must be a header value, not empty and without a control character", m.ID)
		}
	}
	if s.batch == 1 {
		m := msgs[0]
		contentType = m.ContentType
		if contentType == "" {
			contentType = defaultContentType
		} else if !validValue([]byte(contentType)) {
			return nil, "", "", fmt.Errorf("event %s: its content type %q holds a control character", m.ID, contentType)
		}
		return m.Payload, m.ID, contentType, nil
	}
	size := 2
	for _, m := range msgs {
		size += 160 + len(m.ID) + len(m.ContentType) + len(m.Payload)*4/3
		for _, h := range m.Headers {
			size += 8 + len(h.Key) + len(h.Value)
		}
	}
	return appendBatch(make([]byte, 0, size), msgs), BatchID(msgs), defaultContentType, nil
}

// mappedHeaders adds the event's headers to h, named by [HeaderName], and
// returns the keys of those left out: an empty name, a reserved or static
// header's, a value HTTP cannot carry.
func (s *Sender) mappedHeaders(h http.Header, headers []Header) (omitted []string) {
	for _, eh := range headers {
		name := HeaderName(eh.Key)
		if name == "" || reserved(name) || len(s.p.static.Values(name)) > 0 || !validValue(eh.Value) {
			omitted = append(omitted, eh.Key)
			continue
		}
		h.Add(name, string(eh.Value))
	}
	return omitted
}

// HeaderName is the HTTP header name an event's header key k is sent as:
// k with every byte that is not one of RFC 9110's token characters (a
// space, a colon, a non-ASCII byte, …) as '-'; "" for an empty k. Case is
// kept (HTTP ignores it; Go's client sends the canonical form), and so
// are '_' and '.', which are token characters.
func HeaderName(k string) string {
	for i := 0; i < len(k); i++ {
		if !tokenChar(k[i]) {
			b := []byte(k)
			for j := i; j < len(b); j++ {
				if !tokenChar(b[j]) {
					b[j] = '-'
				}
			}
			return string(b)
		}
	}
	return k
}

// answer reads resp into a Result and closes its body, having read at
// most drainAnswer bytes of it (the rest is dropped with the
// connection).
func (s *Sender) answer(resp *http.Response) Result {
	defer resp.Body.Close()
	r := Result{Outcome: classify(resp.StatusCode), Status: resp.StatusCode}
	if r.Outcome == Delivered {
		io.CopyN(io.Discard, resp.Body, drainAnswer)
		return r
	}
	r.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	more, _ := io.CopyN(io.Discard, resp.Body, drainAnswer)
	if more > 0 || len(head) == maxAnswer {
		head = cutPartial(head, s.p.masks)
	}
	text := excerpt([]byte(mask(string(head), s.p.masks)), maxQuote)
	// The code's own text, not the answer's reason phrase: the receiver's
	// line is quoted once, bounded, from the body.
	msg := fmt.Sprintf("%s %s: HTTP %d", s.method, s.shown, resp.StatusCode)
	if st := http.StatusText(resp.StatusCode); st != "" {
		msg += " " + st
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		msg += ", a redirect, which is not followed: set url to where the receiver is"
		if loc := resp.Header.Get("Location"); loc != "" {
			if lu, err := resp.Request.URL.Parse(loc); err == nil {
				msg += " (it sent to " + showURL(lu) + ")"
			}
		}
	}
	if text != "" {
		msg += ": " + text
	}
	r.Err = &sendError{msg: mask(msg, s.p.masks)}
	return r
}

// transportError is the error of a request that had no answer: its URL
// shown as showURL shows it, a timeout named as such.
func (s *Sender) transportError(ctx, rctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text holds the whole URL
	}
	switch {
	case ctx.Err() != nil:
		return s.errorf(ctx.Err(), "%s %s: stopped before an answer: %v", s.method, s.shown, ctx.Err())
	case rctx.Err() != nil:
		return s.errorf(err, "%s %s: no answer within the timeout, %s", s.method, s.shown, s.timeout)
	}
	return s.errorf(err, "%s %s: %v%s", s.method, s.shown, err, tlsHint(err))
}

// tlsHint says which setting to check after a TLS handshake that failed,
// or "".
func tlsHint(err error) string {
	var (
		hostname x509.HostnameError
		unknown  x509.UnknownAuthorityError
		verify   *tls.CertificateVerificationError
		op       *net.OpError
	)
	switch {
	case errors.As(err, &hostname):
		return " (reach the receiver by a name its certificate is valid for, or set tls.server_name to one)"
	case errors.As(err, &unknown):
		return " (name the CA that signs the receiver's certificate in tls.ca_file)"
	case errors.As(err, &verify):
		return " (check the receiver's certificate, tls.ca_file and tls.server_name)"
	case errors.As(err, &op) && op.Op == "remote error":
		return " (the receiver refused the TLS handshake: if it requires a client certificate, set tls.cert_file and tls.key_file)"
	}
	return ""
}

// errorf is a sendError wrapping err, its text formatted and masked.
func (s *Sender) errorf(err error, format string, args ...any) error {
	return &sendError{msg: mask(fmt.Sprintf(format, args...), s.p.masks), err: err}
}

// sendError is a Result's Err: a text already masked, and the error it
// stems from, for errors.Is and errors.As.
type sendError struct {
	msg string
	err error
}

func (e *sendError) Error() string { return e.msg }
func (e *sendError) Unwrap() error { return e.err }
