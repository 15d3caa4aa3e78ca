-- Version 2: memory scopes (project memory, the user model), one row per scope.
-- A scope is named by opaque text compared byte for byte; its whole document (the
-- MemoryDocument JSON every memory store keeps) is one `json` value, written back
-- whole by each write under the row's lock.

CREATE TABLE mecated_memory (
    scope      text COLLATE "C" PRIMARY KEY,
    -- One more on every change of the row (the trigger below), so a reader whose
    -- cached document has this version needs nothing else.
    version    bigint NOT NULL DEFAULT 0,
    document   json NOT NULL,
    -- The random id of the write that made this version: a write retried after a
    -- lost reply recognises its own commit.
    write_id   uuid,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Every UPDATE bumps the version, also one made by hand (so no replica keeps serving
-- a cached document the row no longer holds).
CREATE FUNCTION mecated_memory_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := OLD.version + 1;
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END
$$;

CREATE TRIGGER mecated_memory_bump BEFORE UPDATE ON mecated_memory
    FOR EACH ROW EXECUTE FUNCTION mecated_memory_bump();
