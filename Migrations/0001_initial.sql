-- listd's data model: lists hold ordered sections, sections hold ordered items.
-- Order is a gapped integer key per sibling group (see ListStore/PositionKeys.swift),
-- so an insert or move writes one row; a group is renumbered only when no key fits.

CREATE TABLE lists (
    id             TEXT    NOT NULL PRIMARY KEY,
    name           TEXT    NOT NULL,
    epoch          TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    -- The oldest version whose snapshot can still be rebuilt from history.
    history_floor  INTEGER NOT NULL,
    -- History rows of versions at or below this one have been deleted.
    history_pruned INTEGER NOT NULL,
    created_at     INTEGER NOT NULL, -- Unix milliseconds
    updated_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE sections (
    list_id  TEXT    NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    id       TEXT    NOT NULL,
    position INTEGER NOT NULL,
    model    TEXT    NOT NULL,
    PRIMARY KEY (list_id, id)
) STRICT;
CREATE INDEX sections_by_position ON sections (list_id, position);

-- Item ids are unique per list (not per section), so an item keeps its id when it moves.
CREATE TABLE items (
    list_id    TEXT    NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    id         TEXT    NOT NULL,
    section_id TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    model      TEXT    NOT NULL,
    PRIMARY KEY (list_id, id),
    FOREIGN KEY (list_id, section_id) REFERENCES sections (list_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX items_by_position ON items (list_id, section_id, position);

-- Before-images: for each version, the state of every entity that version touched,
-- as it was just before it (the first touch in a version wins). The snapshot at V is
-- the current rows with each entity touched after V replaced by its before-image from
-- the earliest such version. kind: 0 = the list's own fields (name in model),
-- 1 = a section, 2 = an item. existed = 0: the entity did not exist before.
CREATE TABLE history (
    list_id    TEXT    NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    kind       INTEGER NOT NULL CHECK (kind IN (0, 1, 2)),
    entity_id  TEXT    NOT NULL,
    existed    INTEGER NOT NULL CHECK (existed IN (0, 1)),
    section_id TEXT,
    position   INTEGER,
    model      TEXT,
    PRIMARY KEY (list_id, version, kind, entity_id)
) STRICT, WITHOUT ROWID;

-- When each version committed, for age-based retention.
CREATE TABLE versions (
    list_id      TEXT    NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    committed_at INTEGER NOT NULL, -- Unix milliseconds
    PRIMARY KEY (list_id, version)
) STRICT, WITHOUT ROWID;
CREATE INDEX versions_by_time ON versions (committed_at);
