// Package outbox says what an outbox table is to the relay: [Table], how
// its rows become Kafka records (a decoder mapping), where each event's
// outcome is written back to its row, which rows the switch-over from a
// poller adopts, and which publishers its events, or each route's, go to
// ([KafkaPublisher] alone unless it names others). It is the one table type every part of the relay takes:
// the config file is parsed into it, flags build it, and the stream, the
// poller, preflight checks and migrate read it. [Sources] are a relay's
// tables and message sources together: their names (the status table's
// source_table), their mappings, the decoder they make, and the check of
// the topics their events may go to. It runs nothing.
package outbox
