package slot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/status"
)

// TxBeginner begins transactions (*pgxpool.Pool and *pgx.Conn do).
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// CheckAdopt checks cfg's adopt predicates (the tables' and the
// routes', each publisher's: slot.Config.adoptables) against the
// database through q, before anything is created: a table whose
// predicates are not valid (outbox.Table.ValidateAdopt) fails first; a
// predicate PostgreSQL refuses fails with its message (status.CheckAdopt,
// naming the predicate: routes[0].adopt.partner (topic wallet-events)),
// and one that selects no row now (status.CountAdopt), each predicate
// counted alone (a route's, the rows of its tags; one shared by a table's
// publishers, over them all), fails with a *NothingToAdoptError; but not
// a route's, nor a publisher's own, that is false, not NULL, on the
// table's newest row (status.NullOnNewest): its topic, or its publisher,
// is caught up (a literal false too). It returns how many status rows the
// predicates select now, one per (topic, publisher).
func CheckAdopt(ctx context.Context, q status.Planner, cfg Config) (int64, error) {
	adoptables, err := cfg.adoptables()
	if err != nil {
		return 0, err
	}
	var total int64
	counts := map[string]*predicateCount{} // by table and Predicate.Name
	var order []*predicateCount
	for _, a := range adoptables {
		a.Pending = nil // checked by the migrations; the predicates' are the operator's
		preds := a.Predicates()
		if len(preds) == 0 {
			continue
		}
		if err := status.CheckAdopt(ctx, q, a); err != nil {
			return 0, err
		}
		n, err := status.CountAdopt(ctx, q, a)
		if err != nil {
			return 0, err
		}
		total += n
		for _, p := range preds {
			key := a.Source + "\x00" + p.Name()
			c := counts[key]
			if c == nil {
				c = &predicateCount{table: a.Source, p: p}
				counts[key] = c
				order = append(order, c)
			}
			if c.rows > 0 {
				continue // shared by the publishers, and selecting rows for one already
			}
			each := n // one predicate's count is the publisher's
			if len(preds) > 1 {
				if each, err = status.CountAdopt(ctx, q, p.Adoptable); err != nil {
					return 0, err
				}
			}
			c.rows += each
		}
	}
	for _, c := range order {
		if err := c.refuseNone(ctx, q); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// predicateCount is what one adopt predicate of a table selects, over
// the publishers it adopts for.
type predicateCount struct {
	table string
	p     status.Predicate
	rows  int64
}

// refuseNone refuses the predicate when it selects no row: a
// *NothingToAdoptError, unless it is a route's or a publisher's own and
// false, not NULL, on the table's newest row (status.NullOnNewest).
func (c *predicateCount) refuseNone(ctx context.Context, q status.Planner) error {
	if c.rows > 0 {
		return nil
	}
	if c.p.Route >= 0 || c.p.Publisher != "" {
		// A route's topic, or a publisher, may be caught up: its
		// predicate is false on the newest row. NULL there is a subquery
		// that found no row.
		null, err := status.NullOnNewest(ctx, q, c.p)
		if err != nil || !null {
			return err
		}
	}
	return nothingToAdopt(c.table, c.p)
}

// nothingToAdopt is the refusal of p, a predicate of table that selects
// no row.
func nothingToAdopt(table string, p status.Predicate) *NothingToAdoptError {
	e := &NothingToAdoptError{Table: table, Where: p.Where, Publisher: p.Publisher}
	if p.Route >= 0 {
		e.Route, e.Topic = p.Name(), p.Adoptable.Routes[0].Topic
	}
	return e
}

// NothingToAdoptError refuses an adopt predicate that selects no row (a
// route's: no row of its tags): the rows it was meant to select would
// then be sent by nobody. A comparison with a subquery that finds no row
// (a misspelt name in its WHERE) is NULL, and selects nothing.
type NothingToAdoptError struct {
	// Table is the outbox table, as schema.name; Where the predicate.
	Table, Where string
	// Route names the route whose predicate it is, as
	// status.Predicate.Name does (with the publisher, for a publisher's
	// own), and Topic is its topic; both empty for the table's predicate.
	Route, Topic string
	// Publisher is the publisher whose own predicate it is (a config
	// file's adopt: given per publisher); empty for one every publisher
	// of its table or route shares.
	Publisher string
}

func (e *NothingToAdoptError) Error() string {
	if e.Route != "" {
		return fmt.Sprintf("adopt the rows of %s: %s selects no row that the route sends to %s%s, and is NULL on the table's newest row (%s): check it with SELECT (%s) FROM %s ORDER BY <id> DESC LIMIT 1; "+
			"a subquery that finds no row (a misspelt topic or publisher in its WHERE, a missing progress row) makes the comparison NULL. "+
			"Fix the predicate (one false there means the topic is caught up, and is accepted%s)",
			e.Table, e.Route, e.Topic, e.forPublisher(), e.Where, e.Where, e.Table, e.falseForIt())
	}
	if e.Publisher != "" {
		return fmt.Sprintf("adopt the rows of %s: adopt.%s selects no row for publisher %s, and is NULL on the table's newest row (%s): check it with SELECT (%s) FROM %s ORDER BY <id> DESC LIMIT 1; "+
			"a subquery that finds no row (a misspelt topic or publisher in its WHERE, a missing progress row) makes the comparison NULL. "+
			"Fix the predicate (one false there means the publisher is caught up, and is accepted%s)",
			e.Table, e.Publisher, e.Publisher, e.Where, e.Where, e.Table, e.falseForIt())
	}
	return fmt.Sprintf("adopt the rows of %s: the predicate selects no row (%s): check it with SELECT count(*) FROM %s WHERE %s; "+
		"a subquery that finds no row (a misspelt name in its WHERE, a missing progress row) makes the comparison NULL. "+
		"Fix the predicate; if there is nothing to adopt, leave adopt out (without it no row is adopted)",
		e.Table, e.Where, e.Table, e.Where)
}

// forPublisher is " for publisher partner" for a publisher's own
// predicate, else "".
func (e *NothingToAdoptError) forPublisher() string {
	if e.Publisher == "" {
		return ""
	}
	return " for publisher " + e.Publisher
}

// falseForIt is what the refusal adds for a publisher's own predicate:
// how to adopt nothing for it.
func (e *NothingToAdoptError) falseForIt() string {
	if e.Publisher == "" {
		return ""
	}
	return "; false adopts nothing for " + e.Publisher
}

// snapshotName is what PostgreSQL names an exported snapshot
// (0000000A-0000001B-1); anything else is not quoted into SQL.
var snapshotName = regexp.MustCompile(`^[0-9A-Fa-f-]+$`)

// recordNewSlot records a slot just created by repl: its checkpoint row
// at its consistent point with a new stream id (recordStart) and, for
// cfg's tables with pending values, the switch-over's backlog
// (adoptBacklog), in one transaction on db with the intent's end
// (checkpoint.Store.EndCreate), so that a crash leaves all or none (a
// slot with the intent and no checkpoint row is created again:
// recreateUnrecorded). A slot whose recording failed is dropped, to be
// created again; one that cannot be dropped (PostgreSQL restarting) is
// left to the next try, which drops it. It returns how many rows were
// adopted.
func recordNewSlot(ctx context.Context, db DB, repl *replication.Conn, cfg Config, created replication.NewSlot, log *slog.Logger) (int64, error) {
	var n int64
	err := pgx.BeginTxFunc(ctx, db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		if n, err = adoptBacklog(ctx, tx, cfg, created.Snapshot, log); err != nil {
			return err
		}
		if err := recordStart(ctx, tx, cfg, created.ConsistentPoint); err != nil {
			return err
		}
		return checkpoint.NewStore(tx, cfg.CheckpointSchema, cfg.CheckpointTable).EndCreate(ctx, cfg.Slot, created.ConsistentPoint)
	})
	if err == nil {
		return n, nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if derr := repl.DropSlot(dctx, cfg.Slot); derr != nil {
		if adoptRefused(err, cfg) {
			return 0, fatal.Error{Err: fmt.Errorf("%w; and the new slot could not be dropped (%v): drop it (SELECT pg_drop_replication_slot('%s')) and start again", err, derr, cfg.Slot)}
		}
		return 0, fmt.Errorf("%w; and the new slot could not be dropped (%v): the next try drops it and creates it again", err, derr)
	}
	if adoptRefused(err, cfg) {
		return 0, refuseAdopt(err, "the new slot was dropped", cfg)
	}
	return 0, fmt.Errorf("%w (the new slot was dropped: it is created, and records its start, again)", err)
}

// adoptRefused reports whether err is PostgreSQL refusing an adoption of
// cfg for good: SQLSTATE class 42 (a syntax error, a missing column or
// table, a missing privilege) while a table has an adopt predicate.
// Trying again cannot cure it, and each try would create a slot, which
// waits for the database's open transactions.
func adoptRefused(err error, cfg Config) bool {
	var pgErr *pgconn.PgError
	return cfg.Adopts() && errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "42")
}

// refuseAdopt is err, an adoption PostgreSQL refused (adoptRefused), as
// the relay stops on it: fatal, with what the operator can do, and what
// became of the slot (done).
func refuseAdopt(err error, done string, cfg Config) error {
	return fatal.Error{Err: fmt.Errorf("%w (%s): fix adopt: in the config, or %s; then start the relay again",
		err, done, grantAdvice(err, cfg))}
}

// permissionDenied finds the relation a permission_denied error names.
var permissionDenied = regexp.MustCompile(`permission denied for (?:table|relation|view|sequence) (\S+)`)

// grantAdvice says which privilege the relay's role needs for err: SELECT
// on the relation it names when it names one, else on the tables the
// predicate reads.
func grantAdvice(err error, cfg Config) string {
	role := "the relay's role"
	if c, perr := pgconn.ParseConfig(cfg.PostgresURL); perr == nil && c.User != "" {
		role = pgx.Identifier{c.User}.Sanitize()
	}
	on := "each table your adopt: predicate reads"
	if m := permissionDenied.FindStringSubmatch(err.Error()); m != nil {
		on = m[1]
	}
	return "GRANT SELECT ON " + on + " TO " + role
}

// recordStart leaves cfg's checkpoint row at lsn, where a slot the relay
// just created starts, with a new stream id: a new slot is a new stream,
// which never read the WAL before it, so no position of another stream
// (in the checkpoint topic, say: a database this one was copied from) is
// its own.
func recordStart(ctx context.Context, db checkpoint.DB, cfg Config, lsn pglogrepl.LSN) error {
	store := checkpoint.NewStore(db, cfg.CheckpointSchema, cfg.CheckpointTable)
	if err := store.Reset(ctx, cfg.Slot, lsn); err != nil {
		return err
	}
	return store.SetStream(ctx, cfg.Slot, checkpoint.NewStreamID())
}

// adoptBacklog is the switch-over: for each of cfg's tables with pending
// values or an adopt predicate, it parks the rows whose status was
// pending, or that the predicate selected, at snapshot (the one a new
// slot exported) in the status table, once per publisher their events go
// to, each through that publisher's store with that publisher's
// predicates (cfg.adoptables), each once (once per topic of a routed
// row), for each publisher's poller to send as they are then. tx is a
// REPEATABLE READ transaction that has not read yet: it imports the
// snapshot, and so sees exactly the rows committed before the slot's
// consistent point, which the slot will not stream. It logs and returns
// how many rows it adopted.
func adoptBacklog(ctx context.Context, tx pgx.Tx, cfg Config, snapshot string, log *slog.Logger) (int64, error) {
	tables, err := cfg.adoptables()
	if err != nil || len(tables) == 0 {
		return 0, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !snapshotName.MatchString(snapshot) {
		return 0, fmt.Errorf("adopt the pending rows: the new slot exported no usable snapshot (%q)", snapshot)
	}
	if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+snapshot+"'"); err != nil {
		return 0, fmt.Errorf("import the new slot's snapshot: %w", err)
	}
	// Named, so that the next creator ends it if this one dies (endCreator);
	// a slot's name has only a-z, 0-9 and _.
	if _, err := tx.Exec(ctx, "SET LOCAL application_name = '"+adoptAppName(cfg.Slot)+"'"); err != nil {
		return 0, fmt.Errorf("name the session that adopts rows: %w", err)
	}
	stores := map[string]*status.Store{}
	var total int64
	for _, t := range tables {
		store := stores[t.Publisher]
		if store == nil {
			store = status.NewStore(nil, cfg.StatusSchema, cfg.StatusTable, status.Publisher(t.Publisher))
			stores[t.Publisher] = store
		}
		n, err := store.Adopt(ctx, tx, t)
		if err != nil {
			return 0, err
		}
		logAdopted(log, t, n)
		total += n
	}
	return total, nil
}

// logAdopted says how many rows of t a new slot adopted for its
// publisher, and by what.
func logAdopted(log *slog.Logger, t status.Adoptable, n int64) {
	attrs := []any{"table", t.Source, "publisher", t.Publisher, "rows", n}
	if len(t.Pending) > 0 {
		attrs = append(attrs, "statuses", t.Pending)
	}
	if t.Where != "" {
		attrs = append(attrs, "adopt", t.Where)
	}
	var routes []string
	for _, p := range t.Predicates() {
		if p.Route >= 0 {
			routes = append(routes, p.Name()+": "+p.Where)
		}
	}
	if len(routes) > 0 {
		attrs = append(attrs, "routes_adopt", routes)
	}
	log.Info("adopted the rows selected when the slot was created: the publisher's poller sends each as it is now; none is sent twice by the switch", attrs...)
}
