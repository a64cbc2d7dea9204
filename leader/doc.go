// Package leader decides which relay leads a slot: the one whose session
// holds the slot's advisory lock ([Lead], [TryLead]), keyed by the slot's
// name, so that one relay at a time streams it (or `cdc-relay recover`
// repairs it). The others stand by, retrying the lock, and a
// [StandbyWatch] says who holds it and whether that holder streams the
// slot at all.
//
// It guarantees that a lock is taken only by a session named "cdc-relay
// leader" first (a standby tells a relay from any other holder), that the
// lock lives exactly as long as its session (a [Lock] is never handed back
// to a pool), and that [Lock.Watch] reports a lock whose session stopped
// answering as lost: another relay may lead by then.
package leader
