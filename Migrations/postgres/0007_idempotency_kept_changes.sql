-- A keyed write answered with its change keeps that change as bytes; see
-- Migrations/0012_idempotency_kept_changes.sql.
ALTER TABLE idempotency_keys ADD COLUMN kept_change bytea;
