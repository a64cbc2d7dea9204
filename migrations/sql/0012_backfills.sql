-- The backfills (`cdc-relay backfill`): one row per outbox table, its last
-- backfill, which keeps it up to date while it runs, so that `cdc-relay
-- status` and a relay's /status show it. A row whose state is running is
-- running only while its session (backend_pid, application_name) lives: a
-- backfill killed leaves its row as it was.
CREATE TABLE IF NOT EXISTS {{backfills}} (
    table_name       text        PRIMARY KEY,
    run_id           text        NOT NULL,
    predicate        text        NOT NULL,
    state            text        NOT NULL,
    backend_pid      integer     NOT NULL,
    application_name text        NOT NULL,
    rows_published   bigint      NOT NULL DEFAULT 0,
    rows_selected    bigint      NOT NULL DEFAULT 0,
    last_key         text,
    started_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
