-- History rows carry the entity's state after their version too (issue 21).
--
-- A history row has always held the entity's state before its version (the
-- before-image: existed, section_id, position, model). A catch-up from V needs
-- each touched entity's state at V (the before-image of its first row after V)
-- and now, which it read by joining every history row with the entity's
-- current row: an index probe per row, about 40% of a 10,000-version catch-up
-- on SQLite and most of it on PostgreSQL.
--
-- Now the writer also stores each row's after-image when its version commits
-- (ListWriter.recordedChange, from the current rows it reads for the commit's
-- own change anyway): after_state 1 with the state, 0 when the entity is gone
-- after that version. The after-image of an entity's last row after V is its
-- state now, so a catch-up reads the history rows of its span and nothing
-- else (Database.touchedEntitiesFromHistory). Rows written before this
-- migration have after_state NULL; a span holding one is read with the join,
-- as before, until those rows are pruned.
ALTER TABLE history ADD COLUMN after_state INTEGER CHECK (after_state IN (0, 1));
ALTER TABLE history ADD COLUMN after_section_id TEXT;
ALTER TABLE history ADD COLUMN after_position INTEGER;
ALTER TABLE history ADD COLUMN after_model TEXT;
