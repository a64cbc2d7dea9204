-- What the deals service does: the deal change and its notifications in one
-- transaction. Three transactions, five notifications.

-- A deal is created and assigned: its owner is told.
BEGIN;
INSERT INTO deals (id, title, stage, owner_id, amount)
VALUES (1001, 'Acme Corp renewal', 'qualified', '6f1c2a9e-4b7d-4e3a-9c51-0d2e8f3a7b10', 48000.00);
INSERT INTO notification_outbox (deal_id, recipient_id, template, payload)
VALUES (1001, '6f1c2a9e-4b7d-4e3a-9c51-0d2e8f3a7b10', 'deal-assigned',
        '{"dealId": 1001, "title": "Acme Corp renewal", "stage": "qualified", "assignedBy": "Dana Whitfield"}');
COMMIT;

-- The deal moves to negotiation: the owner and the sales manager are told.
BEGIN;
UPDATE deals SET stage = 'negotiation', updated_at = now() WHERE id = 1001;
INSERT INTO notification_outbox (deal_id, recipient_id, template, payload) VALUES
    (1001, '6f1c2a9e-4b7d-4e3a-9c51-0d2e8f3a7b10', 'deal-stage-changed',
     '{"dealId": 1001, "from": "qualified", "to": "negotiation"}'),
    (1001, 'c3d94e27-81f0-4a6b-b2e5-7a19f60d4c88', 'deal-stage-changed',
     '{"dealId": 1001, "from": "qualified", "to": "negotiation"}');
COMMIT;

-- The deal is won: both are told again.
BEGIN;
UPDATE deals SET stage = 'won', amount = 52500.00, updated_at = now() WHERE id = 1001;
INSERT INTO notification_outbox (deal_id, recipient_id, template, payload) VALUES
    (1001, '6f1c2a9e-4b7d-4e3a-9c51-0d2e8f3a7b10', 'deal-won',
     '{"dealId": 1001, "title": "Acme Corp renewal", "amount": 52500.00, "currency": "EUR"}'),
    (1001, 'c3d94e27-81f0-4a6b-b2e5-7a19f60d4c88', 'deal-won',
     '{"dealId": 1001, "title": "Acme Corp renewal", "amount": 52500.00, "currency": "EUR"}');
COMMIT;
