CREATE TABLE {{outbox}} (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    event_type     text        NOT NULL,
    topic          text,
    payload        jsonb       NOT NULL,
    headers        jsonb,
    created_at     timestamptz NOT NULL DEFAULT now()
);
-- Retention deletes old rows by created_at.
CREATE INDEX {{outbox_created_index}} ON {{outbox}} (created_at);
