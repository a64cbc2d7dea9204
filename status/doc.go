// Package status writes the status table: one row per event the fast path
// could not deliver (too large, an invalid topic, an undecodable row), with a
// full copy of the record and the reason, so the stream can move past it
// without losing it. Rows start FAILED; a poller retries them.
package status
