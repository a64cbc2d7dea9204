-- cdc-relay: outside a transaction
-- The held rows that hold back their key (or topic) until an operator
-- acts: DEAD and not skipped. Each claim reads them, with the FAILED rows
-- not due yet (through the due index), once, to keep every later row of
-- their key behind them, whichever index reads it (a reload row with a
-- key: adopted at the switch-over, a reset parked row). Few rows, so
-- reading them costs a claim little whatever the backlog. Built
-- concurrently, as 0013's.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {{status_dead_index}} ON {{status}} (id)
    WHERE status = 'DEAD' AND skipped_at IS NULL;
