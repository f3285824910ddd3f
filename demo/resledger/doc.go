// Package resledger is the example ledger (demo/ledger) on a resource
// that is not a SQL database: Redis (gate/redisgate) or an S3-compatible
// object store (gate/objgate). It speaks the same HTTP API, so the same
// worker (ledger.RunWorker, ledger.Client) writes to it and
// `fencegate demo --resource redis|s3` tells the same Worker A story.
//
// Where the values live:
//
//   - Redis: one hash, <prefix>values, field = ledger key, value = JSON
//     {value, writer, fence}; a write's HSETs are queued in the EXEC that
//     stores the receipt (on a Redis Cluster, tag the values key with the
//     resource so that it shares the resource's slot). The gate is
//     opened with redisgate.Open, which refuses to start on a server
//     that can lose acknowledged writes (the demo runs redis-server with
//     appendonly yes and appendfsync always).
//   - Object store: the resource's content is a JSON object of its
//     entries; a write reads it, merges the batch, and the gate commits
//     the new content with the manifest. A value is found under the
//     longest resource that prefixes its key ("invoice-batch/2026-07-19"
//     holds "invoice-batch/2026-07-19/total").
//
// The negative control (LeaseOnly) writes the same places with no gate:
// HSET directly, or one plain PUT per key.
//
// With ServeOptions.Report it shows its gate on the registry's dashboard
// as demo/ledger does, through the bounded report sources
// gate/report/redisreport and gate/report/objreport.
package resledger
