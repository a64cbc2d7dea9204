// Package report is what a relay reports of itself: its [Status] (GET
// /status, `cdc-relay status`, the metrics' view of it) and the figures it
// reads from the database for it, [ReadDatabaseStats]: the slot's
// positions, failover, the status table's held events over every topic
// and per topic, the paused topics and the running backfills.
//
// It guarantees that a reading only reads (it needs no privilege beyond
// the relay's role's), that a table of backfills it cannot read leaves
// every other figure as read (DatabaseStats.BackfillsProblem says why),
// and that Status's JSON is the one /status has always served. It keeps no
// state of its own: the running relay keeps the live figures and fills a
// Status from them; `cdc-relay status` fills one from a reading alone. A
// [History], the relay's, holds the last readings of its counters (an
// hour of them, for the console), never more than its size.
package report
