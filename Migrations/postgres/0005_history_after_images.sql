-- History rows carry the entity's state after their version too (issue 21);
-- see Migrations/0008_history_after_images.sql for why and how it is read.
-- Columns without a default: adding them rewrites no row.
ALTER TABLE history ADD COLUMN after_state smallint CHECK (after_state IN (0, 1));
ALTER TABLE history ADD COLUMN after_section_id text COLLATE "C";
ALTER TABLE history ADD COLUMN after_position bigint;
ALTER TABLE history ADD COLUMN after_model text;
