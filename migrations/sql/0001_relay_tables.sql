-- The status table: one row per event the fast path could not deliver,
-- with a full copy of the record so it can be retried without the outbox row.
CREATE TABLE IF NOT EXISTS {{status}} (
    id               bigserial   PRIMARY KEY,
    event_id         text,
    topic            text        NOT NULL,
    record_key       bytea,
    record_value     bytea,
    headers          jsonb,
    record_timestamp timestamptz,
    status           text        NOT NULL DEFAULT 'FAILED'
                     CHECK (status IN ('FAILED', 'DELIVERED', 'DEAD')),
    attempts         integer     NOT NULL DEFAULT 0,
    last_error       text        NOT NULL,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    commit_lsn       pg_lsn,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS {{status_due_index}} ON {{status}} (next_attempt_at) WHERE status = 'FAILED';

-- The checkpoint table: the last position each slot's relay confirmed, kept
-- beside the slot's own so a lost slot is noticed.
CREATE TABLE IF NOT EXISTS {{checkpoint}} (
    slot_name  text        PRIMARY KEY,
    lsn        pg_lsn      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
