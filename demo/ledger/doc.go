// Package ledger is the example protected service of fencegate: a small
// HTTP "ledger" whose writes go through the gate (gate/sqlgate) on SQLite
// or PostgreSQL, and the worker that writes to it under a lease from the
// registry. It is code to copy: every fencegate call a real service needs
// is here, in the order it needs them.
//
// # The service (Server)
//
//	POST /v1/entries    {"mutation": <gate.Mutation JSON>, "entries": [{"key": …, "value": …}]}
//	GET  /v1/receipts?resource=…&operation=…&fence=…   did that operation happen?
//	GET  /v1/values?key=…                               the current value
//
// A write is authenticated by bearer token to a workload identity (the
// same token file the registry uses), so the gate can compare the caller
// with the grant's owner (IDENTITY_MISMATCH). The ledger checks that the
// envelope's payload digest is the digest of the entries it carries
// (PayloadDigest), then runs the gate and the business change in one
// transaction (sqlgate.Gate.Run): both happen, or neither. The business
// table is protected by the gate's coverage guard, so a write that does
// not go through the gate fails in the database.
//
// # The worker (RunWorker)
//
// Acquire a lease over HTTP (client/httpclient), build the envelope,
// send it, and on an unknown outcome (a lost ACK) settle it by operation
// ID against the ledger's receipts (client.Resolver). A batch is cut into
// segments submitted strictly in order (client.RunSegments).
//
// # The negative control
//
// Config.LeaseOnly turns the gate off: the ledger writes whatever a worker
// that believes it holds the lease sends. It exists only so that
// `fencegate demo` can show what the gate prevents; it is not, and must
// never become, an option of the gate.
package ledger
