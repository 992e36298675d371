-- A keyed write answered with its change (PATCH /lists/{list}, PUT of a
-- whole list) keeps that change as bytes in kept_change
-- (ListStore/Changes/NetChange+Encoding.swift) instead of the rendered
-- answer: the writer thread then stores the change it already has, rather
-- than staging and encoding the answer before the commit, and a retry
-- renders it again, the same bytes. Such a record has status 200 and NULL
-- headers and body; the others keep their rendered answer as before.
ALTER TABLE idempotency_keys ADD COLUMN kept_change BLOB;
