-- What the chat service does: the domain change and its outbox record in one
-- transaction. The service names the topic and the key of each record, and
-- an idempotency key unique per topic.

-- A conversation is created.
BEGIN;
INSERT INTO conversations (id, title, created_by)
VALUES ('4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d', 'Launch planning', 'd1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6');
INSERT INTO outbox (topic, key, payload_json, idempotency_key)
VALUES ('chat.conversations', '4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d',
        '{"type": "conversation.created", "conversationId": "4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d", "title": "Launch planning", "createdBy": "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6"}',
        'conversation.created:4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d');
COMMIT;

-- A message is sent.
BEGIN;
INSERT INTO messages (id, conversation_id, sender_id, body)
VALUES ('9f8e7d6c-5b4a-4938-a7b6-c5d4e3f2a1b0', '4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d', 'd1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6', 'Kick-off on Monday at 10?');
INSERT INTO outbox (topic, key, payload_json, idempotency_key)
VALUES ('chat.messages', '4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d',
        '{"type": "message.sent", "messageId": "9f8e7d6c-5b4a-4938-a7b6-c5d4e3f2a1b0", "conversationId": "4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d", "senderId": "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6", "body": "Kick-off on Monday at 10?"}',
        'message.sent:9f8e7d6c-5b4a-4938-a7b6-c5d4e3f2a1b0');
COMMIT;

-- A reply is sent.
BEGIN;
INSERT INTO messages (id, conversation_id, sender_id, body)
VALUES ('0a1b2c3d-4e5f-4061-8728-39a4b5c6d7e8', '4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d', '7b6a5948-3726-4150-9e8d-7c6b5a493827', 'Works for me.');
INSERT INTO outbox (topic, key, payload_json, idempotency_key)
VALUES ('chat.messages', '4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d',
        '{"type": "message.sent", "messageId": "0a1b2c3d-4e5f-4061-8728-39a4b5c6d7e8", "conversationId": "4a6b8c0d-2e4f-4a6b-8c0d-2e4f6a8b0c1d", "senderId": "7b6a5948-3726-4150-9e8d-7c6b5a493827", "body": "Works for me."}',
        'message.sent:0a1b2c3d-4e5f-4061-8728-39a4b5c6d7e8');
COMMIT;
