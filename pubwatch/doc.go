// Package pubwatch watches, beside the stream, that each outbox table
// stays published as the relay started on it, and vouches for the
// positions at which it was.
//
// A table is published as the relay started on it while it has the OID it
// had then, is in the publication, which publishes its inserts, with no
// row filter and no column list that leaves out a column the mapping
// reads, and the publication's catalog stamp is the one the last good
// check read. PostgreSQL sends nothing for a table that left the
// publication, and keepalives would move the slot past the inserts it
// never sent: so the relay confirms no position a watch does not vouch
// for.
//
// What it guarantees:
//
//   - A vouched position is one at or before which every watched table
//     was published as the relay started on it: the WAL position was read
//     before the catalog, so a table that left the publication before the
//     position cannot look published. [Watches.VouchedAt] adds a time no
//     transaction after the position committed before.
//   - A change made and undone between two checks (the table removed and
//     added back, a row filter set and removed) is still seen, by the
//     publication's stamp; and so is one made between two sessions, or
//     while no relay ran, by the marks the checkpoint row keeps.
//   - When a check finds a table no longer published, its watch vouches
//     for nothing newer, ends the stream, and [Watches.Err] says what
//     happened, from what position, and the command that recovers: the
//     session ends with it. So does a Relation message under another OID,
//     and one whose columns lack a required or expected column the table
//     lacks now too ([fatal.Error]).
//   - A session that fails because the publication was missing from the
//     WAL it must decode next, although it exists now, is judged fatal by
//     [Undecodable], with the recover command that gets past that WAL:
//     every reconnect would fail the same way.
//   - A table that lacks an optional column it had when a relay last
//     started on the slot is refused at the start ([ExpectedMappings]) and
//     by recover ([CheckExpectedColumns]), rather than its rows sent
//     without it.
package pubwatch
