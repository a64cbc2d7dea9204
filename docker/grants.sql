-- The relay's role for docker/compose.yaml, applied by its `grants` service
-- (psql, as the administrator) after `migrate`: what
--
--   cdc-relay migrate --print-grants relay
--
-- prints, then the password the relay's URL in compose.yaml uses (a local
-- demo's). docker/docker_test.go checks that it is still what
-- --print-grants prints; after a change there, paste its output again.

-- A least-privilege role for cdc-relay. Pipe this to psql as an administrator, after `cdc-relay migrate`.
-- It sets no password. Set one afterwards, typed at a prompt rather than written here:
--   psql "$ADMIN_URL" -c '\password "relay"'   (or ALTER ROLE "relay" PASSWORD '...'; or use certificates)
-- pg_hba.conf: the relay's connections, its logical replication one included, match the ordinary
-- lines of its database, such as   host <database> "relay" <address> scram-sha-256
-- and not the `replication` keyword's, which are for physical replication only.
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'relay') THEN
    CREATE ROLE "relay";
  END IF;
END $$;
ALTER ROLE "relay" WITH LOGIN REPLICATION;
GRANT USAGE ON SCHEMA "public" TO "relay";
-- The outbox: SELECT for `cdc-relay recover`, DELETE for retention (--retention 0s needs none).
GRANT SELECT, DELETE ON "public"."outbox" TO "relay";
-- The relay's own tables.
GRANT SELECT, INSERT, UPDATE, DELETE ON "public"."outbox_delivery" TO "relay";
DO $$ BEGIN
  EXECUTE format('GRANT USAGE ON SEQUENCE %s TO %I', pg_get_serial_sequence('"public"."outbox_delivery"', 'id'), 'relay');
END $$;
GRANT SELECT, INSERT, UPDATE ON "public"."cdc_relay_checkpoint" TO "relay";
-- The topics paused with `cdc-relay pause --topic`.
GRANT SELECT, INSERT, DELETE ON "public"."cdc_relay_paused_topics" TO "relay";
-- The backfills, which the relay and `cdc-relay status` read to show the running ones.
GRANT SELECT ON "public"."cdc_relay_backfills" TO "relay";
-- To run `cdc-relay backfill` as this role (not needed by the relay), uncomment: it keeps the keys it selects in a
-- temporary table (TEMPORARY on the database; PUBLIC has it unless revoked) and its progress in the table of backfills.
-- GRANT TEMPORARY ON DATABASE <database> TO "relay";
-- GRANT INSERT, UPDATE ON "public"."cdc_relay_backfills" TO "relay";
-- It also needs SELECT on the tables its --where predicate reads besides the outbox table.

-- The demo's password; the image's pg_hba.conf lets the role connect with
-- it, for replication too (a logical replication connection matches the
-- lines of its database, as any other).
ALTER ROLE "relay" PASSWORD 'relay';
