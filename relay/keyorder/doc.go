// Package keyorder holds back what must wait so that each record key's
// events reach Kafka in commit order: the keys held behind a parked event
// or a record waiting to be produced alone, and the paused topics.
//
// One Order serves one replication session. The stream asks it about
// every event (Check) and the deliveries tell it when a key's record
// fails, is parked or goes alone; the poller's deliveries release keys
// whose held rows are gone. It guarantees that, while a key is held, no
// later event of that key passes Check, and that the parks of one key
// commit their rows in stream order (Turn). Check allocates nothing but
// when it makes a key held by its hash whole again and, with nothing
// held, costs one atomic load. Past 65,536 held keys, those that hold
// nothing but their rows are held by a 64-bit hash only, to bound the
// memory a pause or a refusal over millions of keys takes. It knows events only as
// decoder.Event and their Place; it reads the status table only through
// Store.
package keyorder
