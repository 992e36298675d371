-- Declared item indexes (issue 14), as ../0002_item_indexes.sql (SQLite) but
-- maintained by one trigger function in jsonb: `#>` reads a numeric component
-- as an array index or an object key, whichever the model holds, so
-- list_index_paths (SQLite's JSON path spellings) is kept for symmetry but
-- not needed here. value is jsonb, so '1.0' and '1' are one value, as
-- canonical JSON says; the store re-checks every candidate in full anyway.

CREATE TABLE list_indexes (
    list_id text COLLATE "C" NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    path    text COLLATE "C" NOT NULL,
    PRIMARY KEY (list_id, path)
);

CREATE TABLE list_index_paths (
    list_id   text COLLATE "C" NOT NULL,
    path      text COLLATE "C" NOT NULL,
    json_path text COLLATE "C" NOT NULL,
    PRIMARY KEY (list_id, path, json_path),
    FOREIGN KEY (list_id, path) REFERENCES list_indexes (list_id, path) ON DELETE CASCADE
);

CREATE TABLE item_values (
    list_id    text COLLATE "C" NOT NULL,
    path       text COLLATE "C" NOT NULL,
    value      jsonb  NOT NULL,
    section_id text COLLATE "C" NOT NULL,
    position   bigint NOT NULL,
    item_id    text COLLATE "C" NOT NULL,
    PRIMARY KEY (list_id, path, value, section_id, position, item_id),
    FOREIGN KEY (list_id, item_id) REFERENCES items (list_id, id) ON DELETE CASCADE,
    FOREIGN KEY (list_id, path) REFERENCES list_indexes (list_id, path) ON DELETE CASCADE
);
CREATE INDEX item_values_by_item ON item_values (list_id, item_id);

CREATE FUNCTION item_values_maintain() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM list_indexes WHERE list_id = NEW.list_id) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM item_values WHERE list_id = OLD.list_id AND item_id = OLD.id;
    END IF;
    INSERT INTO item_values (list_id, path, value, section_id, position, item_id)
    SELECT NEW.list_id, l.path, v.value, NEW.section_id, NEW.position, NEW.id
    FROM list_indexes l
    CROSS JOIN LATERAL (SELECT NEW.model::jsonb #> string_to_array(l.path, '.') AS value) v
    WHERE l.list_id = NEW.list_id
      AND jsonb_typeof(v.value) IN ('null', 'boolean', 'number', 'string')
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER item_values_on_insert AFTER INSERT ON items
FOR EACH ROW EXECUTE FUNCTION item_values_maintain();
CREATE TRIGGER item_values_on_update AFTER UPDATE OF model, section_id, position ON items
FOR EACH ROW EXECUTE FUNCTION item_values_maintain();

-- Lists that enabled text search for `q=`. PostgreSQL keeps only the flag:
-- its `q=` is the bounded scan (pg_trgm is an extension a database owner may
-- not be allowed to create), and the answer's plan says so.
CREATE TABLE list_text_indexes (
    list_id text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES lists (id) ON DELETE CASCADE
);
