// Package report lets a gate show itself on the registry's dashboard
// without touching its write path.
//
// A Reporter is a goroutine beside the service. Every interval (2 s by
// default, never under IntervalMsMin) it reads the gate's state through a
// Source (sqlreport for gate/sqlgate), takes the last decisions from a Log,
// the open MUTATION_UNKNOWN operations from a gatemetrics.UnknownTracker
// and the decision counters, and POSTs one Report to the registry's
// ReportPath as the gate's own identity (bearer token or client
// certificate). It is never called inside Run or Apply: the only thing a
// write does for it is Log.Note after Run has returned, a mutex-guarded
// copy into a fixed ring.
//
// Bounds, on both sides: a report is at most ReportBytesMax bytes and
// carries at most ResourcesPerReportMax resources, DecisionsPerReportMax
// decisions and UnknownPerReportMax UNKNOWN operations; text fields are cut
// to TextBytesMax. The registry accepts at most one report per
// ReportSpacingMsMin per gate identity and keeps what it was told in
// memory, bounded and aged out (dashboard).
//
// The registry cannot reach a gate's database. A resume an operator
// confirms on the dashboard travels back in the answer to the gate's next
// report as a Command signed by the registry's key (grant.SignCommand,
// domain gateCommand.v1). With CommandConfig set, the Reporter verifies it
// against the gate's own trust bundle, checks that it is addressed to this
// gate, not expired, not seen before and issued after the Reporter
// started (what it has seen is kept in memory, so a command from before
// a restart is refused rather than risk applying it twice), applies it
// through the gate's recorded resume (adapt.ResumeAction: refused unless
// the floor is above highestFence), and reports the outcome in its next
// report. Without
// CommandConfig every command is answered "disabled" and nothing changes.
package report
