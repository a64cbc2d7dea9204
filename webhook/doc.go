// Package webhook sends outbox events to one HTTP receiver as Standard
// Webhooks requests (https://www.standardwebhooks.com) and says what the
// receiver answered. It knows nothing of the relay: no position, no key
// order, no retry loop. Its caller decides what to send, when, and what an
// answer means for the event.
//
// A [Config] is one webhook publisher's settings; [Config.Validate] checks
// what can be checked without I/O and [Config.Check] (check-config's) reads
// the secret and the TLS files and resolves the URL's host, sending
// nothing. A [Sender], built by [New], sends [Message]s with [Sender.Send]
// and returns a [Result]: [Delivered] (2xx), [Retry] (5xx, 408, 429, no
// answer) or [Refused] (any other answer, redirects included), with the
// status, the Retry-After the receiver asked for, a short error text and
// the latency. [Backoff] is the wait before the next attempt.
//
// What it guarantees:
//
//   - Every request is signed: webhook-id, webhook-timestamp (the attempt's
//     time, in Unix seconds, as the specification defines it: a retry is
//     signed again at its own time) and webhook-signature "v1," followed by
//     the base64 HMAC-SHA256, keyed by the [Secret], of id "." timestamp "."
//     body, the body exactly as sent.
//   - One event (BatchSize 0 or 1) is sent as its payload, unchanged, with
//     its content type; webhook-id is the event's id. Its mapped headers
//     become HTTP headers: a name's bytes outside RFC 9110's token
//     characters become '-', and a header that cannot be sent (an empty
//     name, one of the headers the package or HTTP sets, a static header's
//     name, a value with a control character) is left out and named in
//     [Result.Omitted], never sent altered.
//   - A batch (BatchSize N > 1) is always a JSON array, even of one event:
//     one element per event, in the given order, {"id", "timestamp",
//     "content_type", "headers", "payload"}; see [Sender.Send]. Its
//     webhook-id is "batch_" and a hash of its events' ids in order, so that
//     the same events sent again carry the same id.
//   - Redirects are not followed (a 3xx is [Refused]), as the specification
//     recommends: the URL is to be updated instead.
//   - The secret is never in an error, a log value or a String; nor are the
//     URL's user information and query string, which show as [redacted]:
//     a token in the query is common. The receiver's answer, quoted in an
//     error, is cut short and has those strings and the static headers'
//     values masked too.
//   - A Sender holds one http.Client with its own Transport: keep-alive to
//     the one host, as many idle connections as the concurrency New is
//     given, TLS from the Config, the Config's timeout on each request
//     (connecting, sending and reading the answer), proxies from the
//     environment (HTTPS_PROXY, NO_PROXY). It is safe for concurrent use.
package webhook
