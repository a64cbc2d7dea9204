package status

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Adoptable is an outbox table whose rows may be adopted at the
// switch-over: those with a pending status, and those a predicate
// selects. See Store.Adopt.
type Adoptable struct {
	// Schema and Name name the table; Source is its name as the status
	// table records it (source_table: schema.name, plain).
	Schema, Name, Source string
	// IDColumn and StatusColumn are its id and status columns;
	// StatusColumn may be empty when Pending is.
	IDColumn, StatusColumn string
	// Pending are the status values that mean "not delivered yet".
	Pending []string
	// Where is an SQL predicate over the table's columns (a config
	// file's adopt:, `migrate --adopt`): the rows it selects are adopted
	// too, whatever their status. It is SQL that the caller trusts, run
	// as it is with the caller's role; empty selects nothing.
	Where string
	// TagsColumn and Routes are the table's routes, when it routes by
	// tags: an adopted row then gets one reload row per topic its tags
	// route it to, and none when they route it nowhere, as the stream
	// sends one copy per topic. The tags column must be an array of text
	// (text[] or varchar[]).
	TagsColumn string
	Routes     []decoder.Route
	// RouteWhere are the routes' own predicates (a config file's
	// routes[i].adopt:), aligned with Routes: entry i is route i's, ""
	// (or none, past the end) for a route without one. A route with a
	// predicate adopts, for its topic, the rows it selects that match the
	// route's tags, and not those Where selects; a route without one
	// adopts those Where selects (none when Where is empty). A row of a
	// pending status is adopted for every route it matches, whatever
	// they select. Each is SQL the caller trusts, as Where is.
	RouteWhere []string
	// KeyColumn, TopicColumn and TopicTemplate are the table's mapping
	// of its record key and topic (decoder.Mapping's): an adopted row's
	// status row gets the key and topic its event will have, so that the
	// relay holds that key until the row is delivered (no later event of
	// the key overtakes it). Each is optional, and a column the table
	// lacks is taken as NULL.
	KeyColumn, TopicColumn, TopicTemplate string
	// TimestampColumn is the table's timestamp column (optional): when
	// the id column is not of an integer type (a uuid, say), the adopted
	// rows are sent in its order, and in the order they were written
	// within one timestamp (see adoptOrder).
	TimestampColumn string
	// Publisher is the publisher the rows are adopted for, one of the
	// table's (a switch-over adopts a table's rows once per publisher
	// its events go to, each through that publisher's store): Store.Adopt
	// refuses an Adoptable of another publisher than its store's. Empty
	// is the store's, whichever it is.
	Publisher string
	// OwnWhere and OwnRouteWhere (aligned with RouteWhere) say which
	// predicates are Publisher's own (a config file's adopt: given as a
	// mapping of publisher to predicate) rather than every publisher's:
	// Predicate.Name names an own one with its publisher, as the file
	// does (adopt.partner, routes[0].adopt.partner).
	OwnWhere      bool
	OwnRouteWhere []bool
	// RouteIndex is, aligned with Routes, each route's index among its
	// table's routes (a config file's routes[i]), when Routes are some of
	// them only (those whose events go to Publisher); nil: a route's
	// index is its place in Routes. Predicate.Name names a route by it.
	RouteIndex []int

	// columns are the table's columns, each with its kind (columnKind),
	// read by Adopt; nil: no key, the topic left empty, the rows in the
	// order of the id column.
	columns map[string]string
}

// The kinds of columns of Adoptable.columns.
const (
	byteaColumn   = "bytea"   // a record key of its bytes
	integerColumn = "integer" // an id whose order is the order written
)

// adopts reports whether t selects any row.
func (t Adoptable) adopts() bool {
	return len(t.Pending) > 0 || t.Where != "" || t.routePredicates()
}

// routeWhere is route i's own predicate; "" when it has none.
func (t Adoptable) routeWhere(i int) string {
	if i < len(t.RouteWhere) && i < len(t.Routes) {
		return t.RouteWhere[i]
	}
	return ""
}

// tableWhere is the table's predicate (Where) when it may adopt a row:
// the table has no routes, or a route without a predicate of its own;
// "" otherwise, so that the rows only it selects are not read for
// nothing.
func (t Adoptable) tableWhere() string {
	if len(t.Routes) == 0 {
		return t.Where
	}
	for i := range t.Routes {
		if t.routeWhere(i) == "" {
			return t.Where
		}
	}
	return ""
}

// routeIndex is route i's index among its table's routes (RouteIndex),
// as the config file names it.
func (t Adoptable) routeIndex(i int) int {
	if i < len(t.RouteIndex) {
		return t.RouteIndex[i]
	}
	return i
}

// ownPublisher is Publisher when own says a predicate is Publisher's own,
// else "".
func (t Adoptable) ownPublisher(own bool) string {
	if own {
		return t.Publisher
	}
	return ""
}

// routePredicates reports whether a route of t has a predicate of its
// own.
func (t Adoptable) routePredicates() bool {
	for i := range t.Routes {
		if t.routeWhere(i) != "" {
			return true
		}
	}
	return false
}

// Predicate is one of an Adoptable's predicates: the table's (Where) or
// a route's (RouteWhere), with the Adoptable that selects exactly the
// status rows it adopts.
type Predicate struct {
	// Route is the index of the route whose predicate it is among its
	// table's routes (Adoptable.RouteIndex: the config file's
	// routes[i]); -1 for the table's.
	Route int
	// Where is the predicate.
	Where string
	// Publisher is the publisher whose own predicate it is (an entry of
	// a config file's adopt: mapping); "" for one shared by every
	// publisher of its table or route.
	Publisher string
	// Adoptable adopts what the predicate selects, as its table does,
	// and nothing else (no pending status): for a route's, the rows it
	// selects that match that route's tags, for its topic; for the
	// table's, the rows it selects, for the topics of the routes without
	// a predicate of their own (when the table has routes).
	Adoptable Adoptable
}

// Name names p as the operator wrote it: "adopt" for the table's,
// "routes[1].adopt (topic payment-events)" for a route's, and with the
// publisher when it is a publisher's own: "adopt.partner",
// "routes[1].adopt.partner (topic payment-events)".
func (p Predicate) Name() string {
	key := "adopt"
	if p.Publisher != "" {
		key += "." + p.Publisher
	}
	if p.Route < 0 {
		return key
	}
	return fmt.Sprintf("routes[%d].%s (topic %s)", p.Route, key, p.Adoptable.Routes[0].Topic)
}

// Predicates lists t's predicates, the table's first then the routes' in
// their order, each with the Adoptable that adopts what it selects (see
// Predicate): CheckAdopt names the one PostgreSQL refuses, and a caller
// can count what each selects (CountAdopt). The table's is left out when
// it is empty, or when every route has a predicate of its own (it then
// selects nothing); none without predicates.
func (t Adoptable) Predicates() []Predicate {
	var ps []Predicate
	bare := t
	bare.Pending, bare.StatusColumn, bare.RouteWhere, bare.Routes = nil, "", nil, nil
	bare.OwnWhere, bare.OwnRouteWhere, bare.RouteIndex = false, nil, nil
	if t.tableWhere() != "" {
		table := bare
		for i, r := range t.Routes {
			if t.routeWhere(i) == "" {
				table.Routes = append(table.Routes, r)
			}
		}
		ps = append(ps, Predicate{Route: -1, Where: t.Where, Publisher: t.ownPublisher(t.OwnWhere), Adoptable: table})
	}
	for i, r := range t.Routes {
		if w := t.routeWhere(i); w != "" {
			route := bare
			route.Where, route.Routes = w, []decoder.Route{r}
			own := i < len(t.OwnRouteWhere) && t.OwnRouteWhere[i]
			ps = append(ps, Predicate{Route: t.routeIndex(i), Where: w, Publisher: t.ownPublisher(own), Adoptable: route})
		}
	}
	return ps
}

// Planner runs a query (*pgx.Conn, a pool and pgx.Tx have it).
type Planner interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// oneStatement is the arguments of a statement that holds a predicate,
// with the extended protocol asked for whatever the connection's default
// (simple_protocol in the URL, say): PostgreSQL then accepts one
// statement and no more, so that a predicate holding a `;` can neither
// run a statement of its own nor end the transaction it runs in.
func oneStatement(args []any) []any {
	return append([]any{pgx.QueryExecModeDescribeExec}, args...)
}

// adoptedReason is the last_error of an adopted row.
const adoptedReason = "adopted: selected when the relay's replication slot was created; sent as the row is now"

// Adopt parks, through q, every row of t whose status is one of its
// pending values or that its predicate (Where) selects, once (a routed
// row once per topic whose route selects it: RouteWhere), as Reload
// rows of the store's publisher due now, in the order of the id column:
// that publisher's poller sends each as its outbox row is then (and
// Kafka's writes the row back), and its relay holds each row's key
// (ReloadKeys) until then. A table whose events go to several
// publishers is adopted once per publisher, each with its own Adoptable
// and store (the switch-over's, slot.adoptBacklog). It is the
// switch-over's backlog: run in a transaction that imported the snapshot
// a replication slot exported when it was created, it adopts exactly the
// rows committed before the slot's consistent point (the slot streams
// the others), so the switch misses no row and sends none twice. One
// INSERT … SELECT (a single statement: oneStatement) adopts them all.
// Rows without an id are left out (the poller reads a row by its id). An
// Adoptable of another publisher (Adoptable.Publisher) is refused,
// adopting nothing. It returns how many status rows it added (one per
// topic of a routed row).
func (s *Store) Adopt(ctx context.Context, q pgdb.DB, t Adoptable) (int64, error) {
	sel, args, err := s.adoptQuery(ctx, q, t)
	if err != nil || sel == "" {
		return 0, err
	}
	tag, err := q.Exec(ctx, "INSERT INTO "+s.table+" (event_id, source_table, topic, status, reload, last_error, record_key, publisher)\n"+sel, oneStatement(args)...)
	if err != nil {
		return 0, adoptError(t, err)
	}
	return tag.RowsAffected(), nil
}

// WouldAdopt counts, through q, the status rows Adopt would add now for
// t, and adds none: the rows it selects, once per topic of a routed row,
// but those of an event the store's publisher holds already for that
// topic. A dry run's count (`cdc-relay recover --dry-run`); it reads
// only, as the caller's role, and is refused as Adopt is.
func (s *Store) WouldAdopt(ctx context.Context, q pgdb.DB, t Adoptable) (int64, error) {
	sel, args, err := s.adoptQuery(ctx, q, t)
	if err != nil || sel == "" {
		return 0, err
	}
	var n int64
	if err := q.QueryRow(ctx, "SELECT count(*) FROM (\n"+sel+"\n) AS cdc_relay_counted", oneStatement(args)...).Scan(&n); err != nil {
		return 0, adoptError(t, err)
	}
	return n, nil
}

// adoptQuery returns the SELECT of the status rows Adopt adds for t, the
// store's publisher's, and its arguments: "" when t selects no row. An
// Adoptable of another publisher is an error.
func (s *Store) adoptQuery(ctx context.Context, q pgdb.DB, t Adoptable) (string, []any, error) {
	if t.Publisher != "" && t.Publisher != s.publisher {
		return "", nil, fmt.Errorf("adopt the rows of %s for publisher %s through the status store of publisher %s: "+
			"make the store with status.Publisher(%q)", t.Source, t.Publisher, s.publisher, t.Publisher)
	}
	if !t.adopts() {
		return "", nil, nil
	}
	if t.KeyColumn != "" || t.TopicColumn != "" || t.TopicTemplate != "" || t.TimestampColumn != "" {
		cols, err := tableColumns(ctx, q, t)
		if err != nil {
			return "", nil, err
		}
		t.columns = cols
	}
	sel, args := adoptSelect(t, adoptInto{table: s.table, publisher: s.publisherSQL, mine: s.mine("cdc_relay_held")})
	return sel, args, nil
}

// tableColumns reads, through q, t's columns, each with its kind: bytea,
// whose record key is its bytes rather than its text (not a domain over
// it: the stream names the domain's type, and the decoder reads its
// text); integer (smallint, integer, bigint, numeric, or a domain over
// one); or none.
func tableColumns(ctx context.Context, q pgdb.DB, t Adoptable) (map[string]string, error) {
	cols := map[string]string{}
	err := q.QueryRow(ctx, "SELECT coalesce(jsonb_object_agg(a.attname, CASE WHEN a.atttypid = 'bytea'::regtype THEN 'bytea'"+
		" ELSE CASE coalesce(nullif(ty.typbasetype, 0), a.atttypid) WHEN 'int2'::regtype THEN 'integer' WHEN 'int4'::regtype THEN 'integer'"+
		" WHEN 'int8'::regtype THEN 'integer' WHEN 'numeric'::regtype THEN 'integer' ELSE '' END END), '{}')"+
		" FROM pg_attribute AS a JOIN pg_type AS ty ON ty.oid = a.atttypid"+
		" WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped", pgx.Identifier{t.Schema, t.Name}.Sanitize()).Scan(&cols)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", t.Source, err)
	}
	return cols, nil
}

// CheckAdopt asks PostgreSQL to plan the query that adopts t's rows,
// without running it (EXPLAIN, a single statement: oneStatement), so
// that a predicate that is not valid SQL, names a column the table lacks,
// reads a table the role may not read or is not a boolean fails with
// PostgreSQL's message before anything is created; when a route has a
// predicate of its own, or the table's is a publisher's own, the message
// names the predicate refused (Predicate.Name). A table routed by tags of
// another type than an array of text is refused, with what to do.
func CheckAdopt(ctx context.Context, q Planner, t Adoptable) error {
	if !t.adopts() {
		return nil
	}
	err := explainAdopt(ctx, q, t)
	if err == nil {
		return nil
	}
	named := false // the refusal is a predicate's, named
	if t.routePredicates() || t.OwnWhere && t.Where != "" {
		err, named = refusedPredicate(ctx, q, t, err)
	}
	if !named && len(t.Routes) > 0 && !isUndefinedID(t, err) {
		return fmt.Errorf("%w (a table routed by tags adopts with a text[] or varchar[] tags column only)", adoptError(t, err))
	}
	return adoptError(t, err)
}

// explainAdopt plans the query that adopts t's rows (EXPLAIN), and
// returns PostgreSQL's refusal.
func explainAdopt(ctx context.Context, q Planner, t Adoptable) error {
	sel, args := adoptSelect(t, adoptInto{})
	rows, err := q.Query(ctx, "EXPLAIN "+sel, oneStatement(args)...)
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	return err
}

// refusedPredicate is err, PostgreSQL's refusal of t's adoption when a
// route of t has a predicate of its own (or the table's is a publisher's
// own), with the name of the predicate
// it refuses (Predicate.Name), so that the operator knows which to fix:
// the first that PostgreSQL refuses planned alone; named says it found
// one. When it refuses the adoption with every predicate true (a tags
// column of another type, no id column), no predicate is to blame, and
// err is returned as it is.
func refusedPredicate(ctx context.Context, q Planner, t Adoptable, err error) (_ error, named bool) {
	plain := t
	plain.Where, plain.RouteWhere = "", make([]string, len(t.Routes))
	if t.tableWhere() != "" {
		plain.Where = "true"
	}
	for i := range t.Routes {
		if t.routeWhere(i) != "" {
			plain.RouteWhere[i] = "true"
		}
	}
	if explainAdopt(ctx, q, plain) != nil {
		return err, false
	}
	for _, p := range t.Predicates() {
		if perr := explainAdopt(ctx, q, p.Adoptable); perr != nil {
			return fmt.Errorf("%s: %w", p.Name(), perr), true
		}
	}
	return err, false
}

// CountAdopt counts, through q, the rows t's predicates (Where, and the
// routes' RouteWhere) select now, as Adopt would adopt them (one per
// topic of a routed row, for the topics whose routes select it; none
// without an id), without adopting them: a single statement
// (oneStatement), as the operator's role runs it. Rows of a pending
// status are not counted. To count one predicate's, count its
// Predicate.Adoptable (Predicates).
func CountAdopt(ctx context.Context, q Planner, t Adoptable) (int64, error) {
	t.Pending = nil
	if !t.adopts() {
		return 0, nil
	}
	sel, args := adoptSelect(t, adoptInto{})
	rows, err := q.Query(ctx, "SELECT count(*) FROM (\n"+sel+"\n) AS cdc_relay_counted", oneStatement(args)...)
	if err != nil {
		return 0, adoptError(t, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, adoptError(t, err)
	}
	return n, nil
}

// adoptError is err, from adopting t's rows, with the table's name, and
// what to set when the table has no column named as its id column (the
// default, id, say).
func adoptError(t Adoptable, err error) error {
	if isUndefinedID(t, err) {
		return fmt.Errorf("adopt the rows of %s: %w: the relay reads each adopted row by its id column, %q: "+
			"name the table's id column with --id-column (id: in a config file)", t.Source, err, t.IDColumn)
	}
	return fmt.Errorf("adopt the rows of %s: %w", t.Source, err)
}

// isUndefinedID reports whether err says that t has no column named as
// its id column.
func isUndefinedID(t Adoptable, err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42703" && strings.Contains(pgErr.Message, "."+t.IDColumn+" does not exist")
}

// NullOnNewest reports whether p's predicate is NULL on its table's newest
// row (by the id column): a comparison with a subquery that finds no row
// (a misspelt topic or publisher, a missing progress row). False on a
// table with no row. A route's predicate, or a publisher's own, that
// selects no row but is false there has nothing to adopt: its topic, or
// its publisher, is caught up (a literal false is false there too).
func NullOnNewest(ctx context.Context, q Planner, p Predicate) (bool, error) {
	t := p.Adoptable
	table := pgx.Identifier{t.Schema, t.Name}.Sanitize()
	rows, err := q.Query(ctx, "SELECT (\n"+p.Where+"\n) IS NULL FROM "+table+" ORDER BY "+table+"."+pgx.Identifier{t.IDColumn}.Sanitize()+" DESC LIMIT 1",
		oneStatement(nil)...)
	if err != nil {
		return false, adoptError(t, err)
	}
	null, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return false, adoptError(t, err)
	}
	return len(null) == 1 && null[0], nil
}
