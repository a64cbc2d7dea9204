// Package metrics holds the relay's Prometheus metrics, on a registry of
// their own (no package-level state): counters and histograms that the
// pipeline, the poller and retention update as things happen, and the
// relay's live state (in flight, lag, leadership, the status table's
// counts, its held events per topic, the events behind), read from a
// [Snapshot] once per scrape; a topic that no longer has held events has
// no series.
//
// Nothing here is on the per-event path except [Metrics.CommitToAck]: the
// per-event counts (read, produced) are the relay's own atomic counters,
// reported through the snapshot, so counting costs the stream nothing it
// did not already pay.
package metrics
