// Package pggate is the gate inside PostgreSQL: gate.Decide's rules
// (replay, quarantine, segments, the regression rule, pause and resume
// with floors, shadow and enforce, the coverage guard of protected
// tables) written in PL/pgSQL with pgcrypto only, in a schema of its own
// ("fencegate"), so that a client in any language writes under a fence by
// calling one function in its own transaction:
//
//	BEGIN;
//	SELECT fencegate.apply(:envelope, :payload_digest);  -- raises FGnnn on a rejection
//	INSERT INTO ledger …;                                 -- the business change
//	COMMIT;
//
// The SQL is embedded here, one source file a concern (sql/*.sql), each
// function defined once; Install (fencegate gate install) applies the
// schema versions a database lacks (sql/migrations: tables and data
// only) and then creates the source again, so that an upgraded database
// ends as a fresh one (upgrade_test.go). Go code calls it
// through Apply, Record and the operator functions; any other client
// calls the SQL functions directly (docs/formats.md lists them, with the
// SQLSTATE of every outcome).
//
// Proofs: PostgreSQL has no Ed25519, so the database checks HMAC-SHA256
// proofs ("mac:<keyId>:…", grant.AlgHMACSHA256) under the keys enrolled in
// its own key table (SetKey): the envelope's pair from gateProofs under
// one of them (a key per gate, which the registry holds too: serve
// --gate-keys), else its single proofs (EffectiveProofs). The
// application's roles cannot read the key table:
// apply, record, receipt and state run as the installing role (SECURITY
// DEFINER) and are the only functions granted to fencegate_writer. The
// caller's identity is its login role (session_user), mapped to a
// workload identity by MapCaller. There is no status querier inside the
// database: a close call is a suspected regression, as in an adapter
// without one.
//
// A rejection's records (alarm, quarantine, pause) are written in the
// caller's transaction, which the error rolls back; Record writes them in
// a transaction of their own (Run does it).
package pggate
