-- The event log of a wallet service built on an event store with dynamic
-- consistency boundaries (DCB): every command appends its events to
-- "events" in one transaction, each with a type, tags ("key=value") and
-- JSON data, in position order. A poller read the log after its last
-- position and sent each event to every topic whose tags it matched:
-- wallet-events (tag wallet_id required), payment-events (payment_id or
-- transfer_id).
--
-- The design names the table and its columns (position, type, tags, data)
-- but not their types: each is marked "chosen", with what the event store
-- itself creates. The log has no status column: the poller kept its
-- progress per topic in outbox_topic_progress, so there is nothing to
-- write back to the log.

CREATE TABLE events (
    type           varchar(64) NOT NULL,                  -- chosen: varchar(64), the event type
    tags           text[]      NOT NULL,                  -- chosen: text[] of "key=value"
    data           json        NOT NULL,                  -- chosen: json, as the event store creates it
    transaction_id xid8        NOT NULL,                  -- chosen: xid8, the appending transaction (pg_current_xact_id())
    position       bigserial   PRIMARY KEY,               -- chosen: bigserial, the log's order
    occurred_at    timestamptz NOT NULL DEFAULT now()     -- chosen: timestamptz
);

-- chosen: the event store's own indexes (its reads by transaction, by tags
-- and by type); the design names none.
CREATE INDEX idx_events_transaction_position ON events (transaction_id, position);
CREATE INDEX idx_events_tags ON events USING gin (tags);
CREATE INDEX idx_events_type_position ON events (type, position);

-- The outbox's progress, as the event store's design creates it: one row
-- per (topic, publisher), the publisher's last position in the topic, its
-- status (the team pauses a pair with status = 'PAUSED') and its errors.
-- At the switch-over, the adopt: lines of relay.yaml send each topic the
-- events after its row's last_position, once; then the relay keeps the
-- rows of its publisher true (progress: in relay.yaml), so the team's lag
-- query, dashboards and SQL management go on working.
CREATE TABLE outbox_topic_progress (
    topic             TEXT                     NOT NULL,
    publisher         TEXT                     NOT NULL,
    last_position     BIGINT                   NOT NULL DEFAULT 0,
    last_published_at TIMESTAMP WITH TIME ZONE,
    status            TEXT                     NOT NULL DEFAULT 'ACTIVE',
    error_count       INT                      NOT NULL DEFAULT 0,
    last_error        TEXT,
    updated_at        TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT CURRENT_TIMESTAMP,
    leader_instance   TEXT,
    leader_since      TIMESTAMP WITH TIME ZONE,
    leader_heartbeat  TIMESTAMP WITH TIME ZONE,
    CONSTRAINT pk_outbox_topic_progress PRIMARY KEY (topic, publisher),
    CONSTRAINT chk_outbox_status CHECK (status IN ('ACTIVE', 'PAUSED', 'FAILED'))
);
