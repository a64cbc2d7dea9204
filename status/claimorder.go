package status

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is how Claim finds the rows it may deliver in order.

// candidate is a held row the claim's first query found deliverable in
// order, with its key (a NULL key: a key of its own).
type candidate struct {
	id   int64
	key  orderKey
	size int64 // its record's bytes as stored (recordSize)
}

// orderKey groups the rows delivered in order: a topic and record key, or
// one row alone (a NULL key).
type orderKey struct {
	topic, key string
	solo       int64 // the row's id when it is its own key, else 0
}

// deliverable is true of a held row d that may be delivered now, whatever
// comes before it: FAILED and due, WAITING, or PAUSED, and its topic not
// paused.
func (s *Store) deliverable() string {
	return dueOrParked + s.notPaused()
}

// dueOrParked is true of a held row d that is FAILED and due, WAITING or
// PAUSED.
var dueOrParked = dueOrParkedOf("d")

// dueOrParkedOf is dueOrParked of the row of alias a.
func dueOrParkedOf(a string) string {
	return "(" + a + ".status = 'FAILED' AND " + a + ".next_attempt_at <= now() OR " + a + ".status IN ('WAITING', 'PAUSED'))"
}

// notPaused is the condition, starting with AND, that row d's topic is not
// paused for the store's slot ($2); "" without a pause table. The paused
// topics are read once per query (an array), so that the condition
// filters the rows as they are read, before any sort.
func (s *Store) notPaused() string {
	if s.pauses == "" {
		return ""
	}
	return " AND d.topic <> ALL (ARRAY(" + s.pausedTopics("$2") + "))"
}

// claimInOrder returns, locked in tx and ordered by id, up to limit rows
// that are deliverable in order (see Claim), none of exclude (see
// BeginClaim): it reads as many more candidates as it leaves out.
func (s *Store) claimInOrder(ctx context.Context, tx pgx.Tx, limit int, exclude []int64) ([]Row, error) {
	cands, err := s.candidates(ctx, tx, limit+len(exclude))
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	if len(exclude) > 0 {
		keep := withoutIDs(len(cands), limit, exclude, func(i int) int64 { return cands[i].id })
		kept := make([]candidate, len(keep))
		for j, i := range keep {
			kept[j] = cands[i]
		}
		cands = kept
	}
	// Cut at the claim's bound, in id order: a key whose run is cut keeps
	// its rows before the cut; the others are neither read nor locked.
	cands = cands[:s.within(len(cands), func(i int) int64 { return cands[i].size })]
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.id
	}
	// Locked by id, after the window query, which cannot lock; a row
	// changed meanwhile is checked again, and one another transaction
	// holds is skipped.
	rows, _ := tx.Query(ctx, "SELECT "+rowColumns+" FROM "+s.table+" AS d WHERE d.id = ANY($1) AND d.status IN ('FAILED', 'WAITING', 'PAUSED') AND "+s.mine("d")+
		" ORDER BY d.id FOR UPDATE SKIP LOCKED", ids)
	locked, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return nil, err
	}
	s.ownRows(locked)
	return withoutGaps(cands, locked), nil
}

// recordSize is the bytes of row d's record as stored: its key, value
// and headers (their stored size, compressed or not), read without
// loading them.
const recordSize = "coalesce(octet_length(d.record_key), 0) + coalesce(octet_length(d.record_value), 0) + coalesce(pg_column_size(d.headers), 0)"

// within returns how many of n rows, in claim order, fit in the claim's
// bound (ClaimBytes) by their sizes size(i): at least one.
func (s *Store) within(n int, size func(i int) int64) int {
	if s.claimBytes <= 0 {
		return n
	}
	var total int64
	for i := range n {
		if total += size(i); i > 0 && total > s.claimBytes {
			return i
		}
	}
	return n
}

// candidates returns up to limit held rows, ordered by id, each the
// first of its key's held rows or following it with every row before it
// deliverable now (the longest such prefix of each key), of topics not
// paused: those the solo index reads, and those the keyed index reads,
// merged by id. With ByTopics, those of the topics ordered by key and of
// those ordered by topic (mixedCandidates).
func (s *Store) candidates(ctx context.Context, tx pgx.Tx, limit int) ([]candidate, error) {
	args := []any{limit}
	if s.pauses != "" {
		args = append(args, s.slot)
	}
	if !s.byTopic && len(s.topics) > 0 {
		return s.mixedCandidates(ctx, tx, limit, args)
	}
	return readAllCandidates(ctx, tx, limit, s.candidatesQueries(), args)
}

// readAllCandidates runs each of queries in tx with args and merges
// their candidates by id (mergeByID).
func readAllCandidates(ctx context.Context, tx pgx.Tx, limit int, queries []candidateQuery, args []any) ([]candidate, error) {
	lists := make([][]candidate, 0, len(queries))
	for _, q := range queries {
		l, err := readCandidates(ctx, tx, q.sql, q.ordered, args)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	return mergeByID(limit, lists...), nil
}

// mergeByID returns the first limit candidates of lists, each ordered by
// id, in id order, each row once: the lists' queries read snapshots of
// their own, and a row whose topic changed between two of them (`failed
// retry --topic` into a topic ordered otherwise) is in both; the first
// is kept, and the rows as locked say what each is now.
func mergeByID(limit int, lists ...[]candidate) []candidate {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]candidate, 0, min(limit, n))
	for len(out) < limit {
		next := -1
		for i, l := range lists {
			if len(l) > 0 && (next < 0 || l[0].id < lists[next][0].id) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		if c := lists[next][0]; len(out) == 0 || out[len(out)-1].id != c.id {
			out = append(out, c)
		}
		lists[next] = lists[next][1:]
	}
	return out
}

// inIndexOrder are the planner's settings under which a query reads
// every table through an index, in its order, sorts nothing it can read
// in order, and hashes a set of tens of thousands of blocked keys rather
// than scanning it for each row: the solo index read in id order stops
// at the claim's limit. A planner whose statistics say few rows are due
// (a backlog being sent, analyzed when none had been) would otherwise
// read the whole table, or every row of another index, and sort them:
// the whole backlog at each claim.
var inIndexOrder = [][2]string{{"enable_seqscan", "off"}, {"enable_bitmapscan", "off"}, {"enable_sort", "off"}, {"work_mem", "64MB"}}

// noJIT turns PostgreSQL's JIT compilation off for the rest of the claim's
// transaction, set with the first ordered query's inIndexOrder and not put
// back: the claim's plans cost past jit_above_cost once many keys are
// held, and compiling them took a third of a claim that read 100,000
// blocked keys (BenchmarkClaimManyBlockedKeys: 1.72 s with JIT, 1.20 s
// without), for queries that read through indexes, which JIT does not
// speed. It costs no round trip of its own.
var noJIT = [2]string{"jit", "off"}

// readCandidates runs one of the candidates queries in tx, under
// inIndexOrder when ordered (for this query only: the settings are put
// back after it), and then with noJIT for the rest of tx.
func readCandidates(ctx context.Context, tx pgx.Tx, query string, ordered bool, args []any) ([]candidate, error) {
	var names, before []string
	if ordered {
		var err error
		if names, before, err = setPlanner(ctx, tx, append(inIndexOrder[:len(inIndexOrder):len(inIndexOrder)], noJIT)); err != nil {
			return nil, err
		}
		names, before = names[:len(inIndexOrder)], before[:len(inIndexOrder)] // noJIT stays
	}
	rows, _ := tx.Query(ctx, query, args...)
	var (
		c    candidate
		key  []byte
		solo bool
		out  []candidate
	)
	_, err := pgx.ForEachRow(rows, []any{&c.id, &c.key.topic, &key, &solo, &c.size}, func() error {
		c.key.key, c.key.solo = string(key), 0
		if solo {
			c.key.solo = c.id
		}
		out = append(out, c)
		return nil
	})
	if err == nil && ordered {
		_, err = tx.Exec(ctx, "SELECT set_config(n, v, true) FROM unnest($1::text[], $2::text[]) AS t(n, v)", names, before)
	}
	return out, err
}

// setPlanner sets each setting to its value in tx, for the transaction,
// and returns their names and the values they had.
func setPlanner(ctx context.Context, tx pgx.Tx, settings [][2]string) (names, before []string, err error) {
	var values []string
	for _, s := range settings {
		names, values = append(names, s[0]), append(values, s[1])
	}
	rows, _ := tx.Query(ctx, "SELECT current_setting(n), set_config(n, v, true) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(n, v, i) ORDER BY i",
		names, values)
	var was, now string
	_, err = pgx.ForEachRow(rows, []any{&was, &now}, func() error { before = append(before, was); return nil })
	return names, before, err
}

// candidatesQueries returns the queries of the candidates, each taking
// $1, the limit, and $2, the slot when the store has a pause table, and
// returning (id, topic, key, solo, size) in id order: the rows the solo
// index reads (a reload row, or one with a NULL key: soloRow), each a
// candidate when it is deliverable, with no window, so that a backlog of
// them (a switch-over's adopted rows) costs no sort of every held row at
// each claim; and the other held rows, read through the keyed index and
// windowed by key, a paused topic's left out before the window (a key is
// of one topic), so that they cost no sort. A reload row with a key
// (adopted, a reset parked row) is ordered with its key all the same: no
// row of its key after its key's first blocking row (blocked) is a
// candidate, whichever index reads it, and it is not a key of its own
// (solo is false). Ordering by topic, byTopicQueries.
func (s *Store) candidatesQueries() []candidateQuery {
	if s.byTopic {
		solo, keyed := s.byTopicQueries(allTopics)
		return []candidateQuery{{solo, true}, {keyed, true}}
	}
	return s.byKeyQueries(allTopics)
}

// candidateQuery is one of the claim's candidates queries, and whether it
// runs under inIndexOrder.
type candidateQuery struct {
	sql     string
	ordered bool
}

// byKeyQueries are candidatesQueries when ordering by key, of the held
// rows and blocking rows of the topics of which (allTopics: every one):
// the solo rows; the keyed rows of the keys with no blocking row; and the
// keyed rows before their key's first blocking row. A keyed row is in
// order when no held row of its key before it blocks (every held row
// that does not block is deliverable now), so the last two are the
// keyed rows in order; each reads only what it returns (the keyed
// index in id order, up to the claim's limit; the order index from each
// blocking key), whatever the number of held rows.
func (s *Store) byKeyQueries(of topicsOf) []candidateQuery {
	// Not blocked: a key without a blocking row (a hashed subplan), or
	// a row before its key's first; written so that the planner keeps it
	// a filter, not a join.
	notBlocked := func(d string) string {
		return " AND (" + d + ".record_key IS NULL OR (" + d + ".topic, " + d + ".record_key) NOT IN (SELECT b.topic, b.record_key FROM " + blockedAlias + " AS b)" +
			" OR " + d + ".id < (SELECT b.first FROM " + blockedAlias + " AS b WHERE b.topic = " + d + ".topic AND b.record_key = " + d + ".record_key))"
	}
	with := "WITH " + blockedAlias + " AS MATERIALIZED (SELECT x.topic, x.record_key, min(x.id) AS first FROM (" + s.blocking() +
		") AS x WHERE x.record_key IS NOT NULL" + of("x") + " GROUP BY x.topic, x.record_key) "
	solo := with + "SELECT d.id, d.topic, coalesce(d.record_key, ''::bytea), d.record_key IS NULL, " + recordSize + " FROM " + s.table + " AS d" +
		" WHERE " + heldWhere("d") + " AND " + soloRow("d") + " AND " + s.deliverable() + " AND " + s.mine("d") + of("d") + notBlocked("d") + " ORDER BY d.id LIMIT $1"
	free := with + "SELECT d.id, d.topic, d.record_key, false, " + recordSize + " FROM " + s.table + " AS d" +
		" WHERE " + heldWhere("d") + " AND " + keyedRow("d") + " AND " + s.deliverable() + " AND " + s.mine("d") + of("d") +
		" AND (d.topic, d.record_key) NOT IN (SELECT b.topic, b.record_key FROM " + blockedAlias + " AS b) ORDER BY d.id LIMIT $1"
	before := with + "SELECT d.id, d.topic, d.record_key, false, d.size FROM " + blockedAlias + " AS b CROSS JOIN LATERAL (" +
		"SELECT d.id, d.topic, d.record_key, " + recordSize + " AS size FROM " + s.table + " AS d WHERE " + heldWhere("d") + " AND " + keyedRow("d") +
		" AND d.topic = b.topic AND sha256(d.record_key) = sha256(b.record_key) AND d.record_key = b.record_key AND d.id < b.first AND " +
		s.deliverable() + " AND " + s.mine("d") + " ORDER BY d.id LIMIT $1) AS d ORDER BY d.id LIMIT $1"
	return []candidateQuery{{solo, true}, {free, true}, {before, false}}
}

// blockedAlias names the claim's blocking rows by key (or topic): the
// first of each.
const blockedAlias = "cdc_relay_blocked"

// blocking selects (topic, record_key, id) of the held rows that cannot
// be delivered now and hold back every later row of their key: FAILED
// and not due yet (read through the due index, migration 0001), or DEAD
// and not skipped (the dead index, migration 0018). Both are few beside
// a backlog, so a claim reads them all, once.
func (s *Store) blocking() string {
	return "SELECT e.topic, e.record_key, e.id, e.reload FROM " + s.table + " AS e WHERE e.status = 'FAILED' AND e.next_attempt_at > now() AND " + s.mine("e") +
		" UNION ALL SELECT e.topic, e.record_key, e.id, e.reload FROM " + s.table + " AS e WHERE e.status = 'DEAD' AND e.skipped_at IS NULL AND " + s.mine("e")
}

// soloRow is true of a row d that the solo index reads: a reload row, or
// one with a NULL key (a key of its own; a reload row with a key is
// ordered with its key all the same, see candidatesQueries). With
// heldWhere, the predicate of the solo index (migration 0013), which
// reads them in id order.
func soloRow(d string) string {
	return "(" + d + ".record_key IS NULL OR " + d + ".reload)"
}

// keyedRow is true of a row d that is ordered with the other rows of its
// topic and key: not soloRow. With heldWhere, the predicate of the keyed
// index (migration 0013).
func keyedRow(d string) string {
	return d + ".record_key IS NOT NULL AND NOT " + d + ".reload"
}

// withoutGaps keeps the locked rows that follow their key's first
// candidate without a gap: a key whose candidate was not locked (another
// transaction holds it, or changed it meanwhile) keeps only the rows
// before it.
func withoutGaps(cands []candidate, locked []Row) []Row {
	byID := make(map[int64]Row, len(locked))
	for _, r := range locked {
		byID[r.ID] = r
	}
	stopped := map[orderKey]bool{}
	var out []Row
	for _, c := range cands {
		r, ok := byID[c.id]
		if !ok {
			stopped[c.key] = true
		}
		if ok && !stopped[c.key] {
			out = append(out, r)
		}
	}
	return out
}

// NextDue returns how long until the next FAILED row of a topic not
// paused is due for its next attempt, later than now, by the database's
// clock (so that a relay's clock ahead of it makes no wait too short),
// and false when none is: the poller sleeps until then rather than a
// whole interval. It reads the status table's due index (migration 0001).
func (s *Store) NextDue(ctx context.Context) (time.Duration, bool, error) {
	args := []any{}
	notPaused := ""
	if s.pauses != "" {
		args = append(args, s.slot)
		notPaused = " AND d.topic <> ALL (ARRAY(" + s.pausedTopics("$1") + "))"
	}
	var secs *float64
	err := s.db.QueryRow(ctx, "SELECT extract(epoch FROM min(d.next_attempt_at) - now())::float8 FROM "+s.table+" AS d WHERE d.status = 'FAILED' AND d.next_attempt_at > now()"+
		" AND "+s.mine("d")+notPaused, args...).Scan(&secs)
	if err != nil {
		return 0, false, fmt.Errorf("read when the next row of %s is due: %w", s.table, err)
	}
	if secs == nil {
		return 0, false, nil
	}
	return time.Duration(*secs * float64(time.Second)), true, nil
}
