// Package progress keeps a team's own progress table true while the relay
// runs: a table such as an event store's outbox_topic_progress, one row
// per (topic, publisher), which the team's old poller wrote and its
// dashboards, lag queries and runbooks still read.
//
// What it guarantees:
//
//   - A row's position is written only once the checkpoint row passed it,
//     and the transactions writing to the outbox table when it was read
//     ended: every event of the topic up to it was delivered, or is held
//     in the status table, and it is below the lowest id of the topic's
//     held events ([Writer]). Positions only grow. (An id taken from the
//     sequence before its row is inserted can be passed in the moment
//     between the two; one an application allocated ahead, a sequence
//     cache, for as long as it waits.)
//   - While one of the topic's held events fails, the row's error count
//     and last error are the first such one's failed attempts and last
//     error; they clear when the position moves.
//   - The team pauses a (topic, publisher) in its own table, and resumes
//     it: [Table.PausedTopics] is the SELECT the status store adds to the
//     pause table's topics (status.PausedBy), so a topic paused there is
//     paused for the relay, and its parked events are sent, in order,
//     once it is not. The relay never writes the status column.
//   - [Check] refuses, before the relay starts, a table it cannot keep
//     true, saying what to fix (the table, a column, a type, a GRANT).
//
// It imports no other package of the relay's but its helpers: the relay
// (package relay) gives a [Writer] the checkpoint row's position and the
// status table's heads.
package progress
