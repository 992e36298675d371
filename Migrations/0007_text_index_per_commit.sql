-- The text index is brought up to date once per commit, not once per write
-- (issue 14: on a 100,000-item list a write to a list with the text index
-- cost about 45 us more than a plain one, most of it FTS5's).
--
-- FTS5 writes what it has pending as a new segment whenever a savepoint or a
-- statement journal opens while it holds any. listd runs each write of a group
-- commit in a savepoint, so with migration 0004's triggers every write became
-- a segment of its own: thirty small segments a commit, each rewriting FTS5's
-- structure record and feeding its merges.
--
-- Now the triggers only note, in item_text_pending, which rows changed and the
-- text the index holds for each (old_body; NULL when it holds none), the first
-- time a row changes since the index was last brought up to date. The writer
-- applies the notes just before it commits (ListWriter.applyPendingText): it
-- removes each noted row's old text, then adds its current text, skipping rows
-- whose text did not change. So the index has its segment per
-- commit, and a write that leaves an item's strings alone costs it nothing.
--
-- Between two commits item_text_pending is empty: it is written and emptied in
-- the same transaction. A write rolled back to its savepoint takes its notes
-- with it. Rows noted by another program that wrote to the file are applied by
-- the next listd commit, and when listd opens the database.
--
-- As before, the triggers act only while the list's flag is set, and the store
-- adds or removes all of a list's entries itself (after applying the notes)
-- when it sets or clears the flag.

CREATE TABLE item_text_pending (
    item_rowid INTEGER PRIMARY KEY,
    old_body   TEXT
) STRICT;

DROP TRIGGER item_text_on_insert;
DROP TRIGGER item_text_on_update;
DROP TRIGGER item_text_on_delete;

-- A new row has no entry yet, unless it took the rowid of a row deleted since
-- the last apply: then that row's note (and its old text) is kept.
CREATE TRIGGER item_text_on_insert AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM list_text_indexes WHERE list_id = NEW.list_id)
BEGIN
    INSERT OR IGNORE INTO item_text_pending (item_rowid, old_body) VALUES (NEW.rowid, NULL);
END;

-- The first change since the last apply records the indexed text; later ones keep it.
CREATE TRIGGER item_text_on_update AFTER UPDATE OF model ON items
WHEN EXISTS (SELECT 1 FROM list_text_indexes WHERE list_id = NEW.list_id)
BEGIN
    INSERT OR IGNORE INTO item_text_pending (item_rowid, old_body)
    SELECT OLD.rowid, coalesce(group_concat(value, char(10)), '') FROM json_tree(OLD.model) WHERE type = 'text';
END;

CREATE TRIGGER item_text_on_delete AFTER DELETE ON items
WHEN EXISTS (SELECT 1 FROM list_text_indexes WHERE list_id = OLD.list_id)
BEGIN
    INSERT OR IGNORE INTO item_text_pending (item_rowid, old_body)
    SELECT OLD.rowid, coalesce(group_concat(value, char(10)), '') FROM json_tree(OLD.model) WHERE type = 'text';
END;
