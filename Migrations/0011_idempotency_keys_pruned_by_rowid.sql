-- Idempotency keys pruned in the order they were claimed (rowid), without
-- the index on created_at: a claim is an insert on the store's one writer
-- thread, inside the write it guards, and that index was a third B-tree to
-- update on each (the table and the unique key are the other two). A rowid
-- table appends each record at its end, so the oldest records are the first
-- rowids; pruning looks at the first few hundred and deletes those past the
-- retention (ListStore/Idempotency.swift, pruneIdempotencyKeys).
DROP INDEX idempotency_keys_by_age;
