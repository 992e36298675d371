-- (PostgreSQL; the same as ../0013_lists_to_prune_flagged.sql.)
-- The lists with history left below their floor are flagged by a column of
-- their own, prune_pending, and the partial index that idle pruning walks
-- (ListWriter.idleCandidates) is on that flag instead of on
-- `history_pruned < history_floor`. Every write past the retention raises a
-- list's floor and prunes up to it, so the old predicate's columns changed on
-- each write, and an index whose predicate names a changed column must be
-- updated with the row (on PostgreSQL, such an update is never HOT: each
-- write left a dead row version and a new index entry, and a busy list's
-- writes/s fell as they piled up). The flag changes only when a write leaves
-- pruning behind (a large write, a burst older than the age limit) or idle
-- pruning catches up; ListWriter.prune keeps it equal to
-- `history_pruned < history_floor` in the same statement that moves them.
ALTER TABLE lists ADD COLUMN prune_pending bigint NOT NULL DEFAULT 0;
UPDATE lists SET prune_pending = 1 WHERE history_pruned < history_floor;
DROP INDEX lists_to_prune;
CREATE INDEX lists_to_prune ON lists (id) WHERE prune_pending = 1;
