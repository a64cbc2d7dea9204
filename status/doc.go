// Package status writes the status table: one row per event the fast path
// could not deliver (too large, an invalid topic, an undecodable row), with a
// full copy of the record and the reason, so the stream can move past it
// without losing it. Rows start FAILED. Nothing delivers them again yet: an
// operator reads them (and, once the cause is fixed, re-publishes them) with
// SQL.
package status
