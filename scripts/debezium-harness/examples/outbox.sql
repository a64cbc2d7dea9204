-- The example's outbox table (examples/debezium-outbox/schema.sql) and the
-- publication the harness's examples read. demo.sh makes a slot for each
-- case, then inserts rows.sql.
CREATE TABLE outboxevent (
    id            uuid         NOT NULL PRIMARY KEY,
    aggregatetype varchar(255) NOT NULL,
    aggregateid   varchar(255) NOT NULL,
    type          varchar(255) NOT NULL,
    payload       jsonb
);
CREATE PUBLICATION debezium_harness FOR TABLE outboxevent;
