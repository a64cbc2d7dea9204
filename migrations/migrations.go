package migrations

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

//go:embed sql/*.sql
var files embed.FS

// Config names the objects Apply creates. Every name is schema-qualified.
type Config struct {
	// OutboxSchema and OutboxTable name the outbox table. It is created with
	// the default layout when missing, unless SkipOutbox is set. Both
	// empty mean no outbox table (a relay of logical decoding messages
	// only, see HasOutbox).
	OutboxSchema, OutboxTable string
	// SkipOutbox leaves the outbox table alone (it must exist already).
	SkipOutbox bool
	// StatusSchema and StatusTable name the status table.
	StatusSchema, StatusTable string
	// CheckpointSchema and CheckpointTable name the checkpoint table; the
	// migration history table lives in the same schema.
	CheckpointSchema, CheckpointTable string
	// Publication is created FOR TABLE the outbox WITH (publish =
	// 'insert', publish_via_partition_root = true), or, if it exists
	// without the outbox table, the table is added to it.
	Publication string
	// Reset is the reset trigger the outbox table needs: with pending
	// values, Apply creates it (or replaces it when it is stale); without,
	// it drops the table's reset trigger if there is one.
	Reset Reset
	// Notice, when set, is called with a line for a person before a step
	// that may take minutes (an index built concurrently on a status
	// table of NoticeFrom bytes or more), so that nobody stops it thinking
	// it hangs.
	Notice func(line string)
	// NoticeFrom is the size of a table from which an index build on it
	// is announced to Notice; 0 means 64 MiB: a smaller table's take
	// seconds at most.
	NoticeFrom int64
}

// HasOutbox reports whether c names an outbox table. Without one, [Apply]
// creates the relay's own tables and a publication of no table (the
// messages pgoutput sends need none), and [Check] checks those only.
func (c Config) HasOutbox() bool { return c.OutboxSchema != "" || c.OutboxTable != "" }

// DefaultConfig names what `cdc-relay migrate` creates without flags:
// public.outbox, public.outbox_delivery, public.cdc_relay_checkpoint and
// the publication cdc_relay.
func DefaultConfig() Config {
	return Config{
		OutboxSchema: "public", OutboxTable: "outbox",
		StatusSchema: "public", StatusTable: "outbox_delivery",
		CheckpointSchema: "public", CheckpointTable: "cdc_relay_checkpoint",
		Publication: "cdc_relay",
	}
}

// Result says what Apply did.
type Result struct {
	// Applied lists the versions this run applied for the first time in
	// the schema's history. (Every migration runs every time: each is
	// idempotent, so Apply converges on the tables Config names.)
	Applied []int
	// CreatedOutbox is true when the default outbox table was created.
	CreatedOutbox bool
	// CreatedPublication is true when the publication was created, and
	// AddedToPublication when the outbox table was added to an existing one.
	CreatedPublication, AddedToPublication bool
	// Reset says what became of the outbox table's reset trigger.
	Reset ResetChange
	// Recreated lists, quoted, the relay's tables (status, checkpoint,
	// paused topics, backfills) this run created again although their
	// migrations were applied before: someone dropped them.
	Recreated []string
}

// migration is one embedded versioned SQL file, NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

func versioned() ([]migration, error) {
	entries, err := fs.ReadDir(files, "sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, rest, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue // not versioned (outbox.sql)
		}
		b, err := files.ReadFile("sql/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(rest, ".sql"), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// CheckWALLevel returns an error that says how to fix it when the server's
// wal_level is not logical.
func CheckWALLevel(ctx context.Context, conn pgdb.DB) error {
	var level string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&level); err != nil {
		return fmt.Errorf("read wal_level: %w", err)
	}
	if level != "logical" {
		return fmt.Errorf("wal_level is %q, but logical replication needs wal_level = logical: "+
			"run ALTER SYSTEM SET wal_level = logical (or set it in postgresql.conf) and restart PostgreSQL", level)
	}
	return nil
}

// historyTable is the quoted name of the table recording the applied
// migrations, in the checkpoint table's schema.
func historyTable(cfg Config) string {
	return pgx.Identifier{cfg.CheckpointSchema, "cdc_relay_schema_migrations"}.Sanitize()
}

// lockTimeout is the longest a migration waits for a table's lock.
const lockTimeout = "5s"

// lockKey serialises concurrent migrate runs on one database.
const lockKey = 0x63646372656c6179 // "cdcrelay"

// Apply checks wal_level, then creates what Config names, and keeps the
// outbox table's reset trigger as Config.Reset asks. With no outbox table
// (Config.HasOutbox false) it creates the relay's own tables and the
// publication, of no table. It is idempotent.
func Apply(ctx context.Context, conn *pgx.Conn, cfg Config) (Result, error) {
	var res Result
	if err := CheckWALLevel(ctx, conn); err != nil {
		return res, err
	}
	ms, err := versioned()
	if err != nil {
		return res, fmt.Errorf("read embedded migrations: %w", err)
	}
	outbox := pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize()
	names := placeholders(cfg)

	unlock, err := lockMigrations(ctx, conn)
	if err != nil {
		return res, err
	}
	defer unlock()

	missing, err := missingRelayTables(ctx, conn, cfg)
	if err != nil {
		return res, err
	}
	if res.Applied, err = applyVersioned(ctx, conn, ms, names, historyTable(cfg), builds{cfg.Notice, cmp.Or(cfg.NoticeFrom, announceMinSize)}); err != nil {
		return res, err
	}
	if len(missing) > 0 && len(missing) < len(relayTables(cfg)) || len(missing) > 0 && len(res.Applied) < len(ms) {
		res.Recreated = missing // not a first install: they had been created
	}
	if !cfg.HasOutbox() {
		res.CreatedPublication, err = publicationOfNoTable(ctx, conn, cfg)
		return res, err
	}
	if res.CreatedOutbox, err = ensureOutbox(ctx, conn, cfg, outbox, names); err != nil {
		return res, err
	}
	if res.Reset, err = keepResetTrigger(ctx, conn, cfg, outbox); err != nil {
		return res, err
	}
	if err := publication(ctx, conn, cfg, outbox, &res); err != nil {
		return res, err
	}
	return res, nil
}

// relayTables are the relay's own tables, quoted, that the migrations
// create.
func relayTables(cfg Config) []string {
	return []string{pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize(), pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize(),
		PauseTableName(cfg), BackfillTableName(cfg)}
}

// missingRelayTables returns the relay's tables that do not exist.
func missingRelayTables(ctx context.Context, conn *pgx.Conn, cfg Config) ([]string, error) {
	var missing []string
	for _, t := range relayTables(cfg) {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t).Scan(&exists); err != nil {
			return nil, fmt.Errorf("look for table %s: %w", t, err)
		}
		if !exists {
			missing = append(missing, t)
		}
	}
	return missing, nil
}

// placeholders replaces the {{name}} placeholders of the embedded SQL with
// the quoted names cfg gives the tables and their indexes, and
// {{body_tag}} with a dollar-quote tag that none of those names holds, so
// that no name can end a function's body and run a statement of its own.
func placeholders(cfg Config) *strings.Replacer {
	names := []string{
		"{{outbox}}", pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize(),
		"{{status}}", pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize(),
		"{{status_due_index}}", pgx.Identifier{cfg.StatusTable + "_due_idx"}.Sanitize(),
		"{{status_event_index}}", pgx.Identifier{cfg.StatusSchema, cfg.StatusTable + "_event_idx"}.Sanitize(),
		"{{status_copy_index}}", pgx.Identifier{cfg.StatusTable + "_copy_idx"}.Sanitize(),
		"{{outbox_created_index}}", pgx.Identifier{cfg.OutboxTable + "_created_at_idx"}.Sanitize(),
		"{{status_done_index}}", pgx.Identifier{cfg.StatusTable + "_done_idx"}.Sanitize(),
		"{{checkpoint}}", pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize(),
		"{{status_source_index}}", pgx.Identifier{cfg.StatusTable + "_source_idx"}.Sanitize(),
		"{{status_reset_function}}", ResetFunction(cfg),
		"{{status_literal}}", pgdb.QuoteLiteral(pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()),
		"{{status_state_check_literal}}", pgdb.QuoteLiteral(cfg.StatusTable + "_state_check"),
		"{{status_order_index}}", pgx.Identifier{cfg.StatusTable + "_order_idx"}.Sanitize(),
		"{{status_corrected_index}}", pgx.Identifier{cfg.StatusTable + "_corrected_idx"}.Sanitize(),
		"{{status_solo_index}}", pgx.Identifier{indexName(cfg.StatusTable, "_solo_idx")}.Sanitize(),
		"{{status_keyed_index}}", pgx.Identifier{indexName(cfg.StatusTable, "_keyed_idx")}.Sanitize(),
		"{{status_dead_index}}", pgx.Identifier{indexName(cfg.StatusTable, "_dead_idx")}.Sanitize(),
		"{{status_source_copy_index}}", pgx.Identifier{SourceCopyIndex(cfg)}.Sanitize(),
		"{{status_source_copy_literal}}", pgdb.QuoteLiteral(pgx.Identifier{cfg.StatusSchema, SourceCopyIndex(cfg)}.Sanitize()),
		"{{status_copy_index_qualified}}", pgx.Identifier{cfg.StatusSchema, cfg.StatusTable + "_copy_idx"}.Sanitize(),
		"{{status_source_copy_index_qualified}}", pgx.Identifier{cfg.StatusSchema, SourceCopyIndex(cfg)}.Sanitize(),
		"{{status_publisher_copy_index}}", pgx.Identifier{PublisherCopyIndex(cfg)}.Sanitize(),
		"{{status_publisher_copy_index_qualified}}", pgx.Identifier{cfg.StatusSchema, PublisherCopyIndex(cfg)}.Sanitize(),
		"{{status_publisher_copy_literal}}", pgdb.QuoteLiteral(pgx.Identifier{cfg.StatusSchema, PublisherCopyIndex(cfg)}.Sanitize()),
		"{{paused_topics}}", PauseTableName(cfg),
		"{{paused_topics_literal}}", pgdb.QuoteLiteral(PauseTableName(cfg)),
		"{{backfills}}", BackfillTableName(cfg),
		"{{own_write_literal}}", pgdb.QuoteLiteral(OwnWriteSetting),
	}
	tag := "$fn$"
	for i := 0; strings.Contains(strings.Join(names, " "), tag); i++ {
		tag = "$fn" + strconv.Itoa(i) + "$"
	}
	return strings.NewReplacer(append(names, "{{body_tag}}", tag)...)
}

// SourceCopyIndex is the name (unqualified: it lives in the status
// table's schema) of the status table's unique index over a parked
// event's identity before version 21: its commit, id, topic and source
// (source_table, NULL read as empty), for rows with an id (migration
// 0014). Migration 0021 replaces it with PublisherCopyIndex.
func SourceCopyIndex(cfg Config) string { return indexName(cfg.StatusTable, "_copy_source_idx") }

// PublisherCopyIndex is the name (unqualified: it lives in the status
// table's schema) of the status table's unique index over a parked
// event's identity: its commit, id, topic, source (source_table, NULL
// read as empty) and publisher, for rows with an id (migration 0021). The
// relay's park is ON CONFLICT on it.
func PublisherCopyIndex(cfg Config) string { return indexName(cfg.StatusTable, "_copy_publisher_idx") }

// PauseTable is the table of paused topics, in the checkpoint table's
// schema: one row per slot and paused topic (see 0010_status_order.sql).
const PauseTable = "cdc_relay_paused_topics"

// PauseTableName is the pause table cfg's relay uses, quoted.
func PauseTableName(cfg Config) string {
	return pgx.Identifier{cfg.CheckpointSchema, PauseTable}.Sanitize()
}

// BackfillTable is the table of backfills, in the checkpoint table's
// schema: one row per outbox table, its last backfill (see
// 0012_backfills.sql).
const BackfillTable = "cdc_relay_backfills"

// BackfillTableName is the backfill table cfg's relay uses, quoted.
func BackfillTableName(cfg Config) string {
	return pgx.Identifier{cfg.CheckpointSchema, BackfillTable}.Sanitize()
}

// ResetFunction is the trigger function, quoted, that a table with pending
// values calls when a row's status is set back to one of them (see
// 0007_status_reload.sql): it lives beside the status table.
func ResetFunction(cfg Config) string {
	return pgx.Identifier{cfg.StatusSchema, cfg.StatusTable + "_note_reset"}.Sanitize()
}

// lockMigrations leaves the session holding the migration lock, with
// lock_timeout set, so that concurrent migrate runs on one database take
// turns. unlock releases the lock (closing the session would too) and
// gives the session its lock_timeout back: what runs next on it, such as
// migrate's creation of the slot, which waits for the transactions
// running then, is not bounded by the migrations' timeout.
func lockMigrations(ctx context.Context, conn *pgx.Conn) (unlock func(), err error) {
	var was string
	if err := conn.QueryRow(ctx, "SHOW lock_timeout").Scan(&was); err != nil {
		return nil, fmt.Errorf("read lock_timeout: %w", err)
	}
	restore := func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT set_config('lock_timeout', $1, false)", was)
	}
	// Every migration runs every time and takes its table's lock, even
	// when it has nothing to do: it must not queue for long behind a long
	// query, since a running relay's writes to the same table queue behind
	// it meanwhile.
	if _, err := conn.Exec(ctx, "SET lock_timeout = '"+lockTimeout+"'"); err != nil {
		return nil, fmt.Errorf("set lock_timeout: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(lockKey)); err != nil {
		defer restore()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			return nil, fmt.Errorf("take migration lock: waited %s for another migrate, which holds it (%s): wait for it to finish; "+
				"if it is a migrate that was stopped while the server went on with its statement, wait for that statement too, or end it "+
				"with SELECT pg_terminate_backend(pid) (an index it was building is built again by the next migrate): %w",
				lockTimeout, migrationLockHolder(ctx, conn), err)
		}
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	return func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(lockKey))
		restore()
	}, nil
}

// migrationLockHolder describes the sessions that hold the migration
// lock on conn's database, as pg_locks and pg_stat_activity show them:
// pid, application_name, state, and when its statement began (of another
// role's session, the state and start show as "?" unless conn's role has
// pg_read_all_stats).
func migrationLockHolder(ctx context.Context, conn *pgx.Conn) string {
	rows, _ := conn.Query(ctx, `SELECT format('pid %s, application_name %L, state %s, query started %s',
			l.pid, coalesce(a.application_name, '?'), coalesce(a.state, '?'), coalesce(a.query_start::text, '?'))
		FROM pg_locks AS l LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND l.classid::bigint = $1::bigint >> 32 AND l.objid::bigint = $1::bigint & 4294967295`, int64(lockKey))
	holders, err := pgx.CollectRows(rows, pgx.RowTo[string])
	switch {
	case err != nil:
		return "pg_locks could not be read: " + err.Error()
	case len(holders) == 0:
		return "it has released it since: run migrate again"
	}
	return strings.Join(holders, "; ")
}

// appliedVersions leaves the migration history table in place and returns
// the versions it records.
func appliedVersions(ctx context.Context, conn *pgx.Conn, history string) (map[int]bool, error) {
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+history+
		" (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"); err != nil {
		return nil, fmt.Errorf("create migration history %s: %w", history, err)
	}
	rows, _ := conn.Query(ctx, "SELECT version FROM "+history)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("read migration history %s: %w", history, err)
	}
	applied := map[int]bool{}
	for _, v := range versions {
		applied[v] = true
	}
	return applied, nil
}

// applyVersioned leaves every versioned migration applied, in order, each
// in a transaction with its history row (or one statement at a time, then
// its history row: applyOne), and returns the versions the
// history did not record before.
//
// Every migration runs every time: each is idempotent, and the history is
// one per schema while the tables it creates are named by flags. So a
// second relay's tables in the same schema are created too, and a dropped
// table is created again.
func applyVersioned(ctx context.Context, conn *pgx.Conn, ms []migration, names *strings.Replacer, history string, notice builds) ([]int, error) {
	applied, err := appliedVersions(ctx, conn, history)
	if err != nil {
		return nil, err
	}
	var firsts []int
	for _, m := range ms {
		err := applyOne(ctx, conn, m, names, history, notice)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "57014" && strings.HasPrefix(m.sql, outsideTransaction):
			return firsts, fmt.Errorf("apply migration %04d_%s: the concurrent index build was canceled (by pg_cancel_backend, a server shutdown, or migrate itself being stopped; "+
				"migrate lifts statement_timeout for it): the relay's tables were not held meanwhile, and the index it left invalid is dropped and built again by the next migrate: "+
				"run migrate again and let it finish, which may take minutes on a large status table: %w", m.version, m.name, err)
		case errors.As(err, &pgErr) && pgErr.Code == "55P03" && strings.HasPrefix(m.sql, outsideTransaction):
			return firsts, fmt.Errorf("apply migration %04d_%s: waited %s for the transactions open on the database when it began (an index built concurrently "+
				"waits for every older transaction, on any table; pg_stat_activity shows them: a long query, or 'idle in transaction'): the relay's tables "+
				"were not held meanwhile; run migrate again when they have ended, which builds the index again: %w", m.version, m.name, concurrentLockTimeout, err)
		case errors.As(err, &pgErr) && pgErr.Code == "55P03":
			return firsts, fmt.Errorf("apply migration %04d_%s: waited %s for a table lock that another session holds (a long query or transaction on the relay's tables): "+
				"nothing was changed; run migrate again when it has ended: %w", m.version, m.name, lockTimeout, err)
		}
		if err != nil {
			return firsts, fmt.Errorf("apply migration %04d_%s: %w", m.version, m.name, err)
		}
		if !applied[m.version] {
			firsts = append(firsts, m.version)
		}
	}
	return firsts, nil
}

// outsideTransaction marks, as its first line, a migration whose
// statements run one at a time outside a transaction: CREATE INDEX
// CONCURRENTLY, which lets the table's writes go on while it builds.
const outsideTransaction = "-- cdc-relay: outside a transaction"

// applyOne leaves migration m applied, with its history row: in one
// transaction, or, when it is marked outsideTransaction, one statement
// at a time (applyOutside).
func applyOne(ctx context.Context, conn *pgx.Conn, m migration, names *strings.Replacer, history string, notice builds) error {
	record := "INSERT INTO " + history + " (version, name) VALUES ($1, $2) ON CONFLICT (version) DO NOTHING"
	if strings.HasPrefix(m.sql, outsideTransaction) {
		if err := applyOutside(ctx, conn, names.Replace(m.sql), names, notice); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, record, m.version, m.name)
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, names.Replace(m.sql)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, record, m.version, m.name)
		return err
	})
}

// concurrentLockTimeout is the longest a migration outside a transaction
// waits for a lock: CREATE INDEX CONCURRENTLY waits for every transaction
// older than its build, on any table, and holds no lock that the relay's
// writes wait for meanwhile.
const concurrentLockTimeout = "2min"

// applyOutside runs the statements of sql (each ends with ";" at the end
// of a line) one at a time, outside a transaction, under
// concurrentLockTimeout and with no statement_timeout (a role's or
// database's would cancel a build on a large table every time); the
// session's own settings are back when it returns. It skips a statement
// a later migration replaced (replacedBy, its placeholder one of names).
// Before each CREATE
// INDEX CONCURRENTLY IF NOT EXISTS, it drops the index when an
// interrupted build left it invalid (dropInvalidIndex): IF NOT EXISTS
// would keep it, unused and updated by every write; then it tells notice
// that the build begins.
func applyOutside(ctx context.Context, conn *pgx.Conn, sql string, names *strings.Replacer, notice builds) error {
	if _, err := conn.Exec(ctx, "SET lock_timeout = '"+concurrentLockTimeout+"'"); err != nil {
		return fmt.Errorf("set lock_timeout: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SET lock_timeout = '"+lockTimeout+"'") }()
	if _, err := conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		return fmt.Errorf("lift statement_timeout for the concurrent index builds: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET statement_timeout") }()
	for _, stmt := range strings.SplitAfter(sql, ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		replaced, err := replacedIndex(ctx, conn, stmt, names)
		if err != nil {
			return err
		}
		if replaced {
			continue
		}
		if err := dropInvalidIndex(ctx, conn, stmt); err != nil {
			return err
		}
		announceBuild(ctx, conn, stmt, notice)
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// announceMinSize is NoticeFrom's default: a smaller table's index
// builds take seconds at most.
const announceMinSize = 64 << 20

// builds says the index builds that may take minutes: to notice, on a
// table of from bytes or more.
type builds struct {
	notice func(string)
	from   int64
}

// announceBuild tells b.notice, if set, that stmt builds an index
// concurrently on a table of b.from bytes or more, which may take
// minutes; not on a smaller table (a new one, empty), nor when its size
// cannot be read.
func announceBuild(ctx context.Context, conn *pgx.Conn, stmt string, b builds) {
	m := concurrentIndex.FindStringSubmatch(stmt)
	if m == nil || b.notice == nil {
		return
	}
	var size int64
	if err := conn.QueryRow(ctx, "SELECT pg_total_relation_size($1::regclass)", m[2]).Scan(&size); err != nil || size < b.from {
		return
	}
	b.notice(fmt.Sprintf("building index %s on %s (%d MiB) concurrently; this may take minutes "+
		"(writes go on meanwhile; if it is stopped, the next migrate builds it again)", m[1], m[2], size>>20))
}

// concurrentIndex finds the index and the table of a CREATE [UNIQUE]
// INDEX CONCURRENTLY IF NOT EXISTS statement, as the placeholders quote them.
var concurrentIndex = regexp.MustCompile(`CREATE (?:UNIQUE )?INDEX CONCURRENTLY IF NOT EXISTS ("(?:[^"]|"")+") ON ("(?:[^"]|"")+"\."(?:[^"]|"")+")`)

// replacedBy marks, as a line of its own before a statement of a
// migration outside a transaction, that the statement is skipped once
// the index the line names exists and is valid: a later migration built
// that index in place of the one the statement builds, and dropped it
// (0014's, since 0021). The line names the index by its placeholder
// without the braces (status_publisher_copy_index_qualified: the name
// schema-qualified), so that the name itself, which may hold a line
// break, is never written into the SQL, where it would end the comment.
var replacedBy = regexp.MustCompile(`(?m)^-- cdc-relay: replaced by index (\w+)$`)

// replacedIndex reports whether stmt is marked replacedBy an index that
// exists and is valid, its placeholder one of names.
func replacedIndex(ctx context.Context, conn *pgx.Conn, stmt string, names *strings.Replacer) (bool, error) {
	m := replacedBy.FindStringSubmatch(stmt)
	if m == nil {
		return false, nil
	}
	placeholder := "{{" + m[1] + "}}"
	index := names.Replace(placeholder)
	if index == placeholder {
		return false, fmt.Errorf("a statement replaced by index %s: no such placeholder", placeholder)
	}
	var valid bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass($1) AND indisvalid)", index).Scan(&valid); err != nil {
		return false, fmt.Errorf("look up index %s: %w", index, err)
	}
	return valid, nil
}

// dropInvalidIndex drops the index that stmt creates concurrently, if it
// exists and is invalid (pg_index.indisvalid false: its build was
// interrupted, or failed), so that stmt builds it again.
func dropInvalidIndex(ctx context.Context, conn *pgx.Conn, stmt string) error {
	m := concurrentIndex.FindStringSubmatch(stmt)
	if m == nil {
		return nil
	}
	name := strings.ReplaceAll(strings.Trim(m[1], `"`), `""`, `"`)
	rows, _ := conn.Query(ctx, `SELECT c.oid::regclass::text FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
		WHERE i.indrelid = to_regclass($1) AND c.relname = $2 AND NOT i.indisvalid`, m[2], name)
	invalid, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("look up index %s: %w", m[1], err)
	}
	for _, idx := range invalid {
		if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+idx); err != nil {
			return fmt.Errorf("drop the invalid index %s, left by an interrupted build, to build it again: %w", idx, err)
		}
	}
	return nil
}

// ensureOutbox leaves the outbox table in place: it creates the default
// one when it is missing (and reports so), unless cfg.SkipOutbox, which
// makes a missing table an error. An existing table is never altered.
func ensureOutbox(ctx context.Context, conn *pgx.Conn, cfg Config, outbox string, names *strings.Replacer) (created bool, err error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", outbox).Scan(&exists); err != nil {
		return false, fmt.Errorf("look up outbox table %s: %w", outbox, err)
	}
	switch {
	case exists:
		return false, nil
	case cfg.SkipOutbox:
		return false, fmt.Errorf("outbox table %s does not exist: create it, point --table at your outbox table, or run migrate without --skip-outbox to create the default one", outbox)
	}
	// Created with its index on created_at (retention deletes by it).
	b, err := files.ReadFile("sql/outbox.sql")
	if err != nil {
		return false, err
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, names.Replace(string(b)))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("create outbox table %s: %w", outbox, err)
	}
	return true, nil
}

// Publication is how a publication covers the outbox table.
type Publication struct {
	// Exists is true when the publication exists.
	Exists bool
	// ViaRoot is its publish_via_partition_root: rows inserted into
	// partitions are published as rows of the partitioned table.
	ViaRoot bool
	// TableOID is the outbox table's OID; 0 when no table has its name.
	TableOID uint32
	// Partitioned is true when the outbox table is partitioned.
	Partitioned bool
	// HasTable is true when the publication publishes the outbox table's
	// inserts under the table's own name, as the relay needs them: the
	// table itself, or a partitioned table published via its root.
	HasTable bool
	// ServerVersion is the server's server_version_num.
	ServerVersion int

	// Inserts is the publication's pubinsert: it publishes inserts.
	Inserts bool
	// RowFilter is the row filter (PostgreSQL 15+) of the publication's
	// entry for the outbox table, as pg_get_expr renders it: rows it
	// leaves out are not published. Empty for none, and when the
	// publication publishes the table for all tables or for its schema,
	// where PostgreSQL ignores it.
	RowFilter string
	// Columns is the column list (PostgreSQL 15+) of the publication's
	// entry for the outbox table, in column order; nil when it publishes
	// every column. Hidden are the table's columns the list leaves out
	// (generated columns, never published, aside); nil with no list.
	Columns, Hidden []string
	// Stamp fingerprints the catalog rows that decide what the
	// publication publishes of the outbox table: pg_publication's row (its
	// raw xmin, which freezing keeps, puballtables and pubinsert), the
	// pg_publication_rel row of the table (its oid and xmin), and on 15+
	// the pg_publication_namespace row of the table's schema. Any change
	// to them, even one undone since (a change made and undone has a new
	// xmin or oid), gives another stamp; a table added to or removed from
	// the publication beside the outbox table does not. Opaque: compare
	// only for equality. Empty when the publication does not exist.
	Stamp string
}

// LookupPublication reports how cfg's publication covers the outbox table:
// whether the table is in it, whether it publishes inserts, the row filter
// and column list of its entry for the table, and a stamp of the catalog
// rows that decide them (see [Publication]). A partitioned table published
// without publish_via_partition_root is not HasTable: its rows are
// published under the names of its partitions.
func LookupPublication(ctx context.Context, q pgdb.DB, cfg Config) (Publication, error) {
	var p Publication
	var oid *uint32
	// pubviaroot read through to_jsonb: the column is missing before
	// PostgreSQL 13.
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1),
		coalesce((SELECT (to_jsonb(p) ->> 'pubviaroot')::boolean FROM pg_publication AS p WHERE pubname = $1), false),
		to_regclass($4)::oid,
		coalesce((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass($4)), false),
		EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3),
		current_setting('server_version_num')::int`,
		cfg.Publication, cfg.OutboxSchema, cfg.OutboxTable, pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize()).
		Scan(&p.Exists, &p.ViaRoot, &oid, &p.Partitioned, &p.HasTable, &p.ServerVersion)
	if err != nil {
		return p, fmt.Errorf("look up publication %q: %w", cfg.Publication, err)
	}
	if oid != nil {
		p.TableOID = *oid
	}
	// pg_publication_tables lists the partitions, not the table, when the
	// publication does not publish via the root.
	p.HasTable = p.HasTable && (!p.Partitioned || p.ViaRoot)
	if p.Exists {
		err = lookupPublishing(ctx, q, cfg.Publication, &p)
	}
	return p, err
}

// ViaRootFix is the statement that makes publication pub publish the rows
// of a partitioned outbox table under the table's name.
func ViaRootFix(pub string) string {
	return "ALTER PUBLICATION " + pgx.Identifier{pub}.Sanitize() + " SET (publish_via_partition_root = true)"
}

func publication(ctx context.Context, conn *pgx.Conn, cfg Config, outbox string, res *Result) error {
	pub := pgx.Identifier{cfg.Publication}.Sanitize()
	p, err := LookupPublication(ctx, conn, cfg)
	if err != nil {
		return err
	}
	switch {
	case !p.Exists:
		// Via the root: a partitioned outbox's rows are published as rows
		// of the table, which is what the relay decodes (PostgreSQL 13+;
		// no effect on a table that is not partitioned).
		with := "publish = 'insert'"
		if p.ServerVersion >= 130000 {
			with += ", publish_via_partition_root = true"
		}
		if _, err := conn.Exec(ctx, "CREATE PUBLICATION "+pub+" FOR TABLE "+outbox+" WITH ("+with+")"); err != nil {
			return fmt.Errorf("create publication %q for %s: %w", cfg.Publication, outbox, err)
		}
		res.CreatedPublication = true
	case p.Partitioned && !p.ViaRoot:
		// Not changed here: the option changes what every subscriber of
		// the publication receives, not only the relay.
		return fmt.Errorf("publication %q does not publish via the partition root, so the rows of the partitioned table %s are published "+
			"under the names of its partitions, which the relay does not read: run %s (it changes what every subscriber of the publication receives), then migrate again",
			cfg.Publication, outbox, ViaRootFix(cfg.Publication))
	case !p.HasTable:
		if _, err := conn.Exec(ctx, "ALTER PUBLICATION "+pub+" ADD TABLE "+outbox); err != nil {
			return fmt.Errorf("add %s to publication %q: %w", outbox, cfg.Publication, err)
		}
		res.AddedToPublication = true
	}
	return nil
}

// publicationOfNoTable leaves cfg's publication in place for a relay with
// no outbox table: created when missing, as CREATE PUBLICATION with no
// FOR clause (publishing no table's rows; pgoutput sends the logical
// decoding messages whatever the publication holds, but needs it to
// exist), publishing inserts only should a table be added to it later. An
// existing publication is left as it is.
func publicationOfNoTable(ctx context.Context, conn *pgx.Conn, cfg Config) (created bool, err error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", cfg.Publication).Scan(&exists); err != nil {
		return false, fmt.Errorf("look up publication %q: %w", cfg.Publication, err)
	}
	if exists {
		return false, nil
	}
	if _, err := conn.Exec(ctx, "CREATE PUBLICATION "+pgx.Identifier{cfg.Publication}.Sanitize()+" WITH (publish = 'insert')"); err != nil {
		return false, fmt.Errorf("create publication %q: %w", cfg.Publication, err)
	}
	return true, nil
}
