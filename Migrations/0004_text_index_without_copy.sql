-- The text index without a copy of the text (issue 14: a write to a list with
-- the text index cost about twice a plain one).
--
-- item_text (migration 0002) kept each item's text twice more, in FTS5's
-- content and document-size tables, and every update rewrote both. Now it is
-- contentless (`content = ''`) with no sizes (`columnsize = 0`; nothing ranks
-- by length): an entry is removed with FTS5's 'delete' command, given the
-- same text it was indexed with, which the triggers compute again from the
-- old model. So the triggers only act while the list's flag is set, and the
-- store adds all of a list's entries before it sets the flag and removes them
-- before it clears it (ListWriter+Indexes.swift): a 'delete' for a row that
-- was never indexed would damage the index.
--
-- Merging: segments are merged 16 at a time instead of 4 (`automerge`), and a
-- level is merged at once only past 64 (`crisismerge`): less merging per write
-- for a few more segments per query.
--
-- The store reads only rowids from item_text and checks every candidate
-- against the item's model, so queries are unchanged.

DROP TRIGGER item_text_on_insert;
DROP TRIGGER item_text_on_update;
DROP TRIGGER item_text_on_delete;
DROP TABLE item_text;

CREATE VIRTUAL TABLE item_text USING fts5 (body, tokenize = 'trigram', content = '', columnsize = 0);
INSERT INTO item_text (item_text, rank) VALUES ('automerge', 16);
INSERT INTO item_text (item_text, rank) VALUES ('crisismerge', 64);

INSERT INTO item_text (rowid, body)
SELECT items.rowid, (SELECT coalesce(group_concat(value, char(10)), '') FROM json_tree(items.model) WHERE type = 'text')
FROM items JOIN list_text_indexes t ON t.list_id = items.list_id;

CREATE TRIGGER item_text_on_insert AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM list_text_indexes WHERE list_id = NEW.list_id)
BEGIN
    INSERT INTO item_text (rowid, body)
    SELECT NEW.rowid, coalesce(group_concat(value, char(10)), '') FROM json_tree(NEW.model) WHERE type = 'text';
END;

CREATE TRIGGER item_text_on_update AFTER UPDATE OF model ON items
WHEN EXISTS (SELECT 1 FROM list_text_indexes WHERE list_id = NEW.list_id)
BEGIN
    INSERT INTO item_text (item_text, rowid, body)
    SELECT 'delete', OLD.rowid, coalesce(group_concat(value, char(10)), '') FROM json_tree(OLD.model) WHERE type = 'text';
    INSERT INTO item_text (rowid, body)
    SELECT NEW.rowid, coalesce(group_concat(value, char(10)), '') FROM json_tree(NEW.model) WHERE type = 'text';
END;

CREATE TRIGGER item_text_on_delete AFTER DELETE ON items
WHEN EXISTS (SELECT 1 FROM list_text_indexes WHERE list_id = OLD.list_id)
BEGIN
    INSERT INTO item_text (item_text, rowid, body)
    SELECT 'delete', OLD.rowid, coalesce(group_concat(value, char(10)), '') FROM json_tree(OLD.model) WHERE type = 'text';
END;
