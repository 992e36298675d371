-- The lists whose history has rows below its floor (deletions the writes
-- deferred), for pruning in idle time: its query (ListWriter.idleCandidates,
-- `WHERE history_pruned < history_floor`) walks this partial index instead of
-- every list, so an idle look costs the lists it finds, not the lists stored
-- (its ORDER BY id is what makes PostgreSQL choose the index).
CREATE INDEX lists_to_prune ON lists (id) WHERE history_pruned < history_floor;
