// Package lanes is the producer of a publisher that is not Kafka (a
// webhook): it sends the records at-least-once delivery hands it, as
// requests to one receiver, and calls back each record's outcome, so that
// at-least-once delivery (package atleastonce, which it serves as its
// Producer) keeps every guarantee it gives for Kafka: the position passes
// a record once it is delivered or parked, a key's records in stream
// order, a refused record parked for its publisher only, its key held
// behind it.
//
// It guarantees that the records of one order key (Config.OrderKey) are
// sent one request after another, in the order they were handed to it,
// and called back in that order: each key has one lane, and lanes send
// side by side up to Config.Lanes requests at once; that a record whose
// key is held behind a parked record (Config.Held) is never sent, but
// called back with ErrNotSent, which at-least-once delivery parks behind
// it; that an answer the receiver may change its mind about (a 5xx, a
// 408, a 429, a timeout, a refused connection) is tried again in place
// with backoff, honouring its Retry-After, for Config.RetryFor at most,
// and the record is then called back with an *Error, which parks it for
// the poller; and that while the receiver keeps failing, the records
// handed to it are called back at once (one request tries every
// Config.ProbeEvery), so that neither the stream nor Kafka's deliveries
// wait on the receiver; and that a receiver that answers, but more slowly
// than the records come, has those that waited past Config.MaxWait, or
// while the lanes hold their share (Config.MaxQueued, MaxQueuedBytes),
// called back to be parked, even while every lane waits on a request (a
// reaper), a key's records in order. Its outage is logged once as it begins and once
// as it ends. Config.Observer is told of each request (its class and
// latency), each try again in place, each record of the stream called
// back to be parked (and why) and each outage's start and end, for the
// publisher's metrics; the lanes import no metrics package. Nothing it does blocks the stream's goroutine: Produce
// queues, and the records queued count in the session's in-flight limits
// (they are Inflights the tracker counts).
package lanes
