-- Idempotency keys (API.md, Retries): a caller's key, claimed in the
-- transaction of the write it guards (ListStore/Idempotency.swift), with the
-- request's fingerprint (SHA-256 of method, target and body) and, once the
-- service has answered, the answer to replay: status, the route's header
-- fields ("name: value" lines) and body. status is NULL between the write's
-- commit and the answer's (or for good, when the process died in between).
-- Pruned by created_at, oldest first, through its index.
CREATE TABLE idempotency_keys (
    caller TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    status INTEGER,
    headers TEXT,
    body TEXT,
    PRIMARY KEY (caller, idem_key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
