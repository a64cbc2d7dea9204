// Package slot is the replication slot's lifecycle: it prepares the slot
// for `migrate` ([Prepare]), creates it, adopts the switch-over's backlog
// with it ([CheckAdopt]), finds where a session resumes ([Resume]), and
// creates again a slot whose creator stopped before it recorded it. It
// takes a narrow [Config], not the relay's, and runs no session.
//
// It guarantees that a slot that adopts rows is created with its
// checkpoint row, the rows it adopts and the end of its intent in one
// transaction, by the slot's leader only ([leader.TryLockSQL]), so that a creator
// killed midway leaves all or none and is healed by the next start; that
// an existing checkpoint is never moved, nor a slot the relay read before
// created again silently (a [*GapError]); and that every creation says
// which transaction it waits for ([WatchCreation]).
package slot
