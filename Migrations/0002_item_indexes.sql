-- Declared item indexes (issue 14): a list names model paths whose scalar
-- values `where=` may look up instead of scanning.
--
-- list_indexes: the declared paths, as dot-separated text ("done", "tags.0").
-- list_index_paths: for each, the SQLite JSON paths it may stand for (a
-- numeric component is an array index or an object key, whichever the model
-- holds there), written by the store when the index is declared.
-- item_values: one row per item and declared path whose value there is a
-- scalar, holding its canonical JSON text (the model is canonical, and `->`
-- returns a scalar's text as stored), and the item's place, so a lookup
-- walks matches in list order. Maintained by the triggers below in the
-- writing statement's transaction; an item's rows go with it by cascade.

CREATE TABLE list_indexes (
    list_id TEXT NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    path    TEXT NOT NULL,
    PRIMARY KEY (list_id, path)
) STRICT, WITHOUT ROWID;

CREATE TABLE list_index_paths (
    list_id   TEXT NOT NULL,
    path      TEXT NOT NULL,
    json_path TEXT NOT NULL,
    PRIMARY KEY (list_id, path, json_path),
    FOREIGN KEY (list_id, path) REFERENCES list_indexes (list_id, path) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE TABLE item_values (
    list_id    TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    section_id TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    item_id    TEXT    NOT NULL,
    PRIMARY KEY (list_id, path, value, section_id, position, item_id),
    FOREIGN KEY (list_id, item_id) REFERENCES items (list_id, id) ON DELETE CASCADE,
    FOREIGN KEY (list_id, path) REFERENCES list_indexes (list_id, path) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE INDEX item_values_by_item ON item_values (list_id, item_id);

CREATE TRIGGER item_values_on_insert AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM list_indexes WHERE list_id = NEW.list_id)
BEGIN
    INSERT OR IGNORE INTO item_values (list_id, path, value, section_id, position, item_id)
    SELECT NEW.list_id, p.path, NEW.model -> p.json_path, NEW.section_id, NEW.position, NEW.id
    FROM list_index_paths p
    WHERE p.list_id = NEW.list_id
      AND json_type(NEW.model, p.json_path) IN ('null', 'true', 'false', 'integer', 'real', 'text');
END;

CREATE TRIGGER item_values_on_update AFTER UPDATE OF model, section_id, position ON items
WHEN EXISTS (SELECT 1 FROM list_indexes WHERE list_id = NEW.list_id)
BEGIN
    DELETE FROM item_values WHERE list_id = OLD.list_id AND item_id = OLD.id;
    INSERT OR IGNORE INTO item_values (list_id, path, value, section_id, position, item_id)
    SELECT NEW.list_id, p.path, NEW.model -> p.json_path, NEW.section_id, NEW.position, NEW.id
    FROM list_index_paths p
    WHERE p.list_id = NEW.list_id
      AND json_type(NEW.model, p.json_path) IN ('null', 'true', 'false', 'integer', 'real', 'text');
END;

-- Full-text search for `q=` (a case-insensitive substring of any string
-- value): lists that enable it have each item's string values, joined by line
-- feeds, in an FTS5 table with the trigram tokenizer, under the item row's
-- rowid. A match there is a candidate; the store checks each one exactly.
CREATE TABLE list_text_indexes (
    list_id TEXT NOT NULL PRIMARY KEY REFERENCES lists (id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE VIRTUAL TABLE item_text USING fts5 (body, tokenize = 'trigram');

CREATE TRIGGER item_text_on_insert AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM list_text_indexes WHERE list_id = NEW.list_id)
BEGIN
    INSERT INTO item_text (rowid, body)
    SELECT NEW.rowid, coalesce(group_concat(value, char(10)), '') FROM json_tree(NEW.model) WHERE type = 'text';
END;

CREATE TRIGGER item_text_on_update AFTER UPDATE OF model ON items
WHEN EXISTS (SELECT 1 FROM list_text_indexes WHERE list_id = NEW.list_id)
BEGIN
    DELETE FROM item_text WHERE rowid = OLD.rowid;
    INSERT INTO item_text (rowid, body)
    SELECT NEW.rowid, coalesce(group_concat(value, char(10)), '') FROM json_tree(NEW.model) WHERE type = 'text';
END;

-- Unconditional: when a list is deleted its flag may go before its items.
CREATE TRIGGER item_text_on_delete AFTER DELETE ON items
BEGIN
    DELETE FROM item_text WHERE rowid = OLD.rowid;
END;
