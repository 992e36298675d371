-- Idempotency keys; see Migrations/0009_idempotency.sql. The primary key
-- makes a second session claiming the same key wait for the first's
-- transaction, then do nothing (ON CONFLICT DO NOTHING): the write that
-- lost the race applies nothing and replays the winner's answer.
CREATE TABLE idempotency_keys (
    caller text COLLATE "C" NOT NULL,
    idem_key text COLLATE "C" NOT NULL,
    fingerprint text NOT NULL,
    created_at bigint NOT NULL,
    status integer,
    headers text,
    body text,
    PRIMARY KEY (caller, idem_key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
