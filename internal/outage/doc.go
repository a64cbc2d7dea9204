// Package outage tells once when a server the relay needs cannot be
// reached, and once when it is back, instead of a line per failed attempt.
//
// A [Tracker] is told of every failed attempt ([Tracker.Failed]) and of
// successes ([Tracker.Succeeded]). Failures are an outage once they have
// lasted the grace period without a success between them: the failure that
// finds the grace passed calls Lost, once; the next success calls Back,
// once, with how long the server was gone, counted from the first failure.
// Failures that a success ends within the grace call nothing, so a blip
// (a broker's connection closed and opened again) logs no line. An outage
// is noticed only at a failure after the grace: the caller's attempts must
// go on while the server is away (a health check every few seconds does).
// [Config.Defer] puts Lost off while another line covers the outage (one
// broker's, while the whole cluster is away), and [Config.Forget] drops a
// run of failures that nothing has tried since for a while.
//
// Succeeded costs one atomic load while nothing fails, for a caller on a
// hot path. A Tracker is safe for concurrent use.
package outage
