// Package admin serves a relay's HTTP endpoints, beside the pipeline:
//
//	GET  /metrics             Prometheus metrics
//	GET  /healthz             200 while the process runs
//	GET  /readyz              200 when the relay is ready, else 503 and why
//	GET  /status              the relay's Status, as JSON
//	POST /pause, /resume      stop and start reading the slot; with
//	                          ?topic=T, hold and deliver again one topic's
//	                          events (kept in the database)
//	GET  /failed              parked events, as JSON (?state=, ?topic=, ?limit=,
//	                          100 by default, at most 1000: more is a 400)
//	POST /failed/{id}/retry   make a parked event due at once (?topic=T: to topic T)
//
// ?publisher=NAME (with ?topic= for /pause and /resume) makes the last
// three act on the parked events and paused topics of the relay's webhook
// publisher NAME instead of Kafka's: an id of another publisher's is a 404
// that says whose it is; a retry to a new topic holds the event's key in
// that publisher's key order before it commits, as Kafka's does; a pause
// or resume of a webhook publisher's topic is written to the pause table
// and takes effect in the relay's streaming session at once, as Kafka's.
//
// The last four are the admin endpoints. With a token (Options.Token) they
// need the header "Authorization: Bearer <token>" and answer 401 without
// it; without one they answer only on a loopback address (403 elsewhere),
// and only requests that name a loopback host and carry no Origin header:
// a web page open in a browser on the same machine reaches loopback too.
// GET /failed is among them because it shows event payloads.
//
// The console (console.go) is pages for a browser under /ui on the same
// rule: with a token, a sign-in form (GET and POST /ui/login) takes it
// once and sets an HttpOnly, SameSite=Strict cookie, an HMAC of a fixed
// text keyed with the token (never the token), compared in constant time;
// the pages redirect to it without the cookie, and a POST without it is a
// 401. Without a token, loopback only, as above. Every POST must carry
// its page's CSRF token (an HMAC keyed with a secret of the process) and
// come from the console's origin (Origin, Sec-Fetch-Site). Every answer
// has a Content-Security-Policy that loads nothing from elsewhere and runs
// no script; html/template escapes whatever a database user chose.
package admin
