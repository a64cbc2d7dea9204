-- What the wallet service does: each command appends all its events in one
-- transaction.
--
-- Routes: wallet-events takes events tagged wallet_id, payment-events those
-- tagged payment_id or transfer_id. Here:
--   WalletOpened ×2, WithdrawalMade, DepositMade → wallet-events
--   PaymentMade (wallet_id and payment_id)       → wallet-events and payment-events
--   MoneyTransferred (from_wallet_id, to_wallet_id, as the transfer handler
--   tags it)                                     → no route: counted, sent nowhere

-- Two wallets are opened.
BEGIN;
INSERT INTO events (type, tags, data, transaction_id) VALUES
    ('WalletOpened', '{wallet_id=wallet-alice}',
     '{"walletId": "wallet-alice", "owner": "Alice Martin", "initialBalance": 1000}', pg_current_xact_id()),
    ('WalletOpened', '{wallet_id=wallet-bob}',
     '{"walletId": "wallet-bob", "owner": "Bob Okafor", "initialBalance": 250}', pg_current_xact_id());
COMMIT;

-- A transfer of 300 from Alice to Bob: MoneyTransferred, WithdrawalMade and
-- DepositMade in one append.
BEGIN;
INSERT INTO events (type, tags, data, transaction_id) VALUES
    ('MoneyTransferred', '{from_wallet_id=wallet-alice,to_wallet_id=wallet-bob}',
     '{"transferId": "transfer-0001", "fromWalletId": "wallet-alice", "toWalletId": "wallet-bob", "amount": 300, "fromBalance": 700, "toBalance": 550}', pg_current_xact_id()),
    ('WithdrawalMade', '{wallet_id=wallet-alice}',
     '{"walletId": "wallet-alice", "amount": 300, "newBalance": 700, "reason": "transfer-0001"}', pg_current_xact_id()),
    ('DepositMade', '{wallet_id=wallet-bob}',
     '{"walletId": "wallet-bob", "amount": 300, "newBalance": 550, "reason": "transfer-0001"}', pg_current_xact_id());
COMMIT;

-- Bob pays a merchant from his wallet.
BEGIN;
INSERT INTO events (type, tags, data, transaction_id) VALUES
    ('PaymentMade', '{wallet_id=wallet-bob,payment_id=payment-7001}',
     '{"paymentId": "payment-7001", "walletId": "wallet-bob", "merchant": "Corner Books", "amount": 42, "newBalance": 508}', pg_current_xact_id());
COMMIT;
