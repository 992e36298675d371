-- Item-query cursors across renumbering (issue 14), as ../0003_renumberings.sql
-- (SQLite): each renumbering of a sibling group is recorded with every
-- member's key before and after, so a cursor made before it can be carried
-- into the new keys exactly.

ALTER TABLE lists ADD COLUMN renumbered bigint NOT NULL DEFAULT 0;
ALTER TABLE lists ADD COLUMN renumber_floor bigint NOT NULL DEFAULT 0;

CREATE TABLE renumberings (
    list_id    text COLLATE "C" NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    generation bigint NOT NULL,
    version    bigint NOT NULL,
    group_id   text COLLATE "C" NOT NULL,
    PRIMARY KEY (list_id, generation)
);
CREATE INDEX renumberings_by_version ON renumberings (list_id, version);

CREATE TABLE renumbered_keys (
    list_id      text COLLATE "C" NOT NULL,
    generation   bigint NOT NULL,
    old_position bigint NOT NULL,
    entity_id    text COLLATE "C" NOT NULL,
    new_position bigint NOT NULL,
    PRIMARY KEY (list_id, generation, old_position, entity_id),
    FOREIGN KEY (list_id, generation) REFERENCES renumberings (list_id, generation) ON DELETE CASCADE
);
