// Package sink produces outbox events to Kafka.
//
// It turns a decoder.Event into a Kafka record and produces it
// asynchronously with franz-go's idempotent producer: records of one key go
// to one partition, the one Kafka's Java producer picks for the key
// ([Partition]), and are never reordered by retries. Every client the sink
// builds has the same producer settings: the linger, the batch size, the
// codec ([Compressions]) and the partitioner. Retriable broker
// errors are retried without limit (backpressure, not loss); [Permanent]
// tells the caller which failures will never succeed, so it can record them
// in the status table and move on.
package sink
