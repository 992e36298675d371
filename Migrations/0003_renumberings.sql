-- Item-query cursors across renumbering (issue 14). A cursor records a place
-- in gapped position keys; when a sibling group runs out of room it is
-- renumbered (ListStore/PositionKeys.swift) and the keys of members that
-- stayed in place change. Each renumbering is recorded here, so a cursor made
-- before it can be carried into the new keys exactly.
--
-- lists.renumbered: how many renumberings the list has had (a cursor carries
-- the count it was made at). lists.renumber_floor: the records of
-- renumberings up to this count have been pruned with the history of their
-- versions, so an older cursor cannot be followed exactly any more.
-- renumberings: one row per renumbering: the version whose write made it and
-- the group ('' for the sections, else the id of the section whose items).
-- renumbered_keys: every member of the group at that moment, its key before
-- and after (the mapping keeps order, so the last member at or before a
-- cursor's old place gives the cursor's new place).

ALTER TABLE lists ADD COLUMN renumbered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lists ADD COLUMN renumber_floor INTEGER NOT NULL DEFAULT 0;

CREATE TABLE renumberings (
    list_id    TEXT    NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    group_id   TEXT    NOT NULL,
    PRIMARY KEY (list_id, generation)
) STRICT, WITHOUT ROWID;
CREATE INDEX renumberings_by_version ON renumberings (list_id, version);

CREATE TABLE renumbered_keys (
    list_id      TEXT    NOT NULL,
    generation   INTEGER NOT NULL,
    old_position INTEGER NOT NULL,
    entity_id    TEXT    NOT NULL,
    new_position INTEGER NOT NULL,
    PRIMARY KEY (list_id, generation, old_position, entity_id),
    FOREIGN KEY (list_id, generation) REFERENCES renumberings (list_id, generation) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
