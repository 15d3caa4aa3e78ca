-- Version 1: sessions, their events and tool-call records, and run leases.
-- Ids are opaque text compared byte for byte (COLLATE "C"), so List sorts by id bytes.
-- Bodies are `json` (the exact text written: key order and \u0000 escapes survive).

CREATE TABLE mecated_sessions (
    id          text COLLATE "C" PRIMARY KEY,
    snapshot    json NOT NULL,
    -- A fresh random id per write: a write retried after a lost reply recognises
    -- its own row.
    write_id    uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    modified_at timestamptz NOT NULL
);

CREATE TABLE mecated_events (
    session_id text COLLATE "C" NOT NULL,
    -- Append order (one sequence for every writer: an append that returned comes
    -- before every later one).
    pos        bigint GENERATED ALWAYS AS IDENTITY,
    -- The event's own `seq` (copied out of the body for the next-seq lookup).
    seq        bigint NOT NULL,
    write_id   uuid NOT NULL,
    event      json NOT NULL,
    PRIMARY KEY (session_id, pos)
);
CREATE INDEX mecated_events_seq ON mecated_events (session_id, seq);

CREATE TABLE mecated_tool_calls (
    session_id text COLLATE "C" NOT NULL,
    pos        bigint GENERATED ALWAYS AS IDENTITY,
    write_id   uuid NOT NULL,
    record     json NOT NULL,
    PRIMARY KEY (session_id, pos)
);

-- One row per leased session: the holder's random token and when the lease ends
-- unless the holder renews it (database time, so replicas' clocks do not matter).
CREATE TABLE mecated_run_leases (
    session_id text COLLATE "C" PRIMARY KEY,
    holder     uuid NOT NULL,
    expires_at timestamptz NOT NULL
);
