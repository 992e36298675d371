-- listd's data model on PostgreSQL: the same tables, columns and meaning as
-- ../0001_initial.sql (SQLite), so the stores' queries port one to one.
-- Ids use the "C" collation: byte order, as SQLite compares them, whatever the
-- database's default collation. Times are Unix milliseconds.

CREATE TABLE lists (
    id             text COLLATE "C" NOT NULL PRIMARY KEY,
    name           text   NOT NULL,
    epoch          text   NOT NULL,
    version        bigint NOT NULL,
    -- The oldest version whose snapshot can still be rebuilt from history.
    history_floor  bigint NOT NULL,
    -- History rows of versions at or below this one have been deleted.
    history_pruned bigint NOT NULL,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL
);

CREATE TABLE sections (
    list_id  text COLLATE "C" NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    id       text COLLATE "C" NOT NULL,
    position bigint NOT NULL,
    model    text   NOT NULL,
    PRIMARY KEY (list_id, id)
);
CREATE INDEX sections_by_position ON sections (list_id, position);

-- Item ids are unique per list (not per section), so an item keeps its id when it moves.
CREATE TABLE items (
    list_id    text COLLATE "C" NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    id         text COLLATE "C" NOT NULL,
    section_id text COLLATE "C" NOT NULL,
    position   bigint NOT NULL,
    model      text   NOT NULL,
    PRIMARY KEY (list_id, id),
    FOREIGN KEY (list_id, section_id) REFERENCES sections (list_id, id) ON DELETE CASCADE
);
CREATE INDEX items_by_position ON items (list_id, section_id, position);

-- Before-images, exactly as in SQLite: for each version, the state of every
-- entity that version touched, as it was just before it (the first touch in a
-- version wins). kind: 0 = the list's own fields (name in model), 1 = a
-- section, 2 = an item. existed = 0: the entity did not exist before.
CREATE TABLE history (
    list_id    text COLLATE "C" NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    version    bigint   NOT NULL,
    kind       smallint NOT NULL CHECK (kind IN (0, 1, 2)),
    entity_id  text COLLATE "C" NOT NULL,
    existed    smallint NOT NULL CHECK (existed IN (0, 1)),
    section_id text COLLATE "C",
    position   bigint,
    model      text,
    PRIMARY KEY (list_id, version, kind, entity_id)
);

-- When each version committed, for age-based retention.
CREATE TABLE versions (
    list_id      text COLLATE "C" NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    version      bigint NOT NULL,
    committed_at bigint NOT NULL,
    PRIMARY KEY (list_id, version)
);
CREATE INDEX versions_by_time ON versions (committed_at);

-- Every commit, in the order of its sequence number, for instances that lost
-- their LISTEN connection: they replay the commits made since shortly before
-- they lost it (by committed_at, since sequence numbers are taken before
-- commit and may commit out of order). Kept for a bounded time; not tied to
-- lists, so a deletion stays visible after its list is gone.
CREATE TABLE commits (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    list_id      text COLLATE "C" NOT NULL,
    epoch        text     NOT NULL,
    version      bigint   NOT NULL,
    deleted      smallint NOT NULL CHECK (deleted IN (0, 1)),
    committed_at bigint   NOT NULL
);
CREATE INDEX commits_by_time ON commits (committed_at);
