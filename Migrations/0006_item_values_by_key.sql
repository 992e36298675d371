-- A declared index's rows are found by their whole key, not through a second
-- index by item: every row of an item is the key its triggers computed from
-- the item's model, section and position, so the update and delete triggers
-- compute the old key from OLD and delete exactly that row (a primary-key
-- seek per path). item_values loses item_values_by_item, which held every row
-- a second time, and its foreign keys, whose checks read items and
-- list_indexes on every insert; the triggers below do what the cascades did.
-- On a 100,000-item list with two indexed paths, a single-op update that moves
-- both entries wrote 5.5 pages a write to the log, now 4.5, and took 75 us of
-- SQLite's time, now 53 (Benchmarks/ServiceBenchmarks/README.md).
--
-- The (path, value) IN (...) form is what lets SQLite seek all six key
-- columns; (list_id, path, value, section_id, position, item_id) IN (...) seeks
-- only four and scans every item with the same value.

DROP TRIGGER item_values_on_insert;
DROP TRIGGER item_values_on_update;

CREATE TABLE item_values_keyed (
    list_id    TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    section_id TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    item_id    TEXT    NOT NULL,
    PRIMARY KEY (list_id, path, value, section_id, position, item_id)
) STRICT, WITHOUT ROWID;
INSERT INTO item_values_keyed SELECT list_id, path, value, section_id, position, item_id FROM item_values;
DROP TABLE item_values;
ALTER TABLE item_values_keyed RENAME TO item_values;

CREATE TRIGGER item_values_on_insert AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM list_indexes WHERE list_id = NEW.list_id)
BEGIN
    INSERT OR IGNORE INTO item_values (list_id, path, value, section_id, position, item_id)
    SELECT NEW.list_id, p.path, NEW.model -> p.json_path, NEW.section_id, NEW.position, NEW.id
    FROM list_index_paths p
    WHERE p.list_id = NEW.list_id
      AND json_type(NEW.model, p.json_path) IN ('null', 'true', 'false', 'integer', 'real', 'text');
END;

-- Only the paths whose value changed, unless the item moved (its section and
-- position are in every row's key): an update that leaves the indexed values
-- alone writes no index row.
CREATE TRIGGER item_values_on_update AFTER UPDATE OF model, section_id, position ON items
WHEN EXISTS (SELECT 1 FROM list_indexes WHERE list_id = NEW.list_id)
BEGIN
    DELETE FROM item_values
    WHERE list_id = OLD.list_id
      AND (path, value) IN (
          SELECT p.path, OLD.model -> p.json_path FROM list_index_paths p
          WHERE p.list_id = OLD.list_id
            AND (OLD.model -> p.json_path IS NOT NEW.model -> p.json_path
                 OR OLD.section_id IS NOT NEW.section_id OR OLD.position IS NOT NEW.position))
      AND section_id = OLD.section_id AND position = OLD.position AND item_id = OLD.id;
    INSERT OR IGNORE INTO item_values (list_id, path, value, section_id, position, item_id)
    SELECT NEW.list_id, p.path, NEW.model -> p.json_path, NEW.section_id, NEW.position, NEW.id
    FROM list_index_paths p
    WHERE p.list_id = NEW.list_id
      AND json_type(NEW.model, p.json_path) IN ('null', 'true', 'false', 'integer', 'real', 'text')
      AND (OLD.model -> p.json_path IS NOT NEW.model -> p.json_path
           OR OLD.section_id IS NOT NEW.section_id OR OLD.position IS NOT NEW.position);
END;

-- Was the cascade of the foreign key to items (also when a section or the list goes).
CREATE TRIGGER item_values_on_delete AFTER DELETE ON items
WHEN EXISTS (SELECT 1 FROM list_indexes WHERE list_id = OLD.list_id)
BEGIN
    DELETE FROM item_values
    WHERE list_id = OLD.list_id
      AND (path, value) IN (
          SELECT p.path, OLD.model -> p.json_path FROM list_index_paths p WHERE p.list_id = OLD.list_id)
      AND section_id = OLD.section_id AND position = OLD.position AND item_id = OLD.id;
END;

-- Was the cascade of the foreign key to list_indexes (dropping an index, deleting the list).
CREATE TRIGGER item_values_on_index_drop AFTER DELETE ON list_indexes
BEGIN
    DELETE FROM item_values WHERE list_id = OLD.list_id AND path = OLD.path;
END;
