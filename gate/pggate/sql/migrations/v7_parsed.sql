-- Schema version 7: the parse cache (issue 45). A grant serves every
-- segment of its operation and a status statement every write until it
-- is refreshed, and parsing either in PL/pgSQL is a fifth of an apply;
-- parsed keeps each parse that succeeded, by the SHA-256 of the
-- message's bytes, as the Go gate's cache does (gate/parsecache.go): the
-- parsers accept only canonical bytes, so an equal digest is an equal
-- message and an equal parse. UNLOGGED: a crash empties it, and a miss
-- only parses again. Every install empties it too (parse.sql), so that
-- no entry outlives the parser that wrote it. The application's roles
-- cannot read or write it.
CREATE UNLOGGED TABLE fencegate.parsed (
  digest BYTEA PRIMARY KEY,      -- SHA-256 of the grant's or the status's bytes
  parse TEXT NOT NULL,           -- the fencegate.grant_t or fencegate.status_t, as text
  until_ms BIGINT NOT NULL       -- the grant's expiresAt or the status's validUntil: after it the entry may go
);
CREATE INDEX parsed_by_until ON fencegate.parsed (until_ms);
REVOKE ALL ON fencegate.parsed FROM PUBLIC;
