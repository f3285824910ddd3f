// Package dashboard is the registry's live page at /ui/: who holds what,
// and is anything stuck. It shows every resource it knows with its
// holder, since when, the lease time left and the waiters with the
// longest wait (Registry.LockStatus), and lists as stuck a wait longer
// than Config.StuckWaitMs and a hold longer than Config.StuckHoldMs
// (stuck.go); each gate's own view as the gate
// reports it (highestFence, mode, pauses with their reason, quarantined
// segments, UNKNOWN operations with their ages); the last decisions of
// the reporting gates; a handoff-latency histogram and acquire/renew rates
// drawn as SVG on the server; the issuer epoch, the revoked line and the
// trust bundle's version and keys.
//
// It is server-rendered html/template with its CSS and a small script
// embedded in the binary (no CDN, works offline). The script only swaps in
// the live part of the page from server-sent events (/ui/events), falling
// back to polling /ui/live; without it the page reloads itself.
//
// Who may see it: the identities serve authenticates (client certificate,
// or a bearer token, which a browser gives once at /ui/login in exchange
// for a server-side session: a random ID in an HttpOnly, SameSite=Strict
// cookie, bound to the identity, ended by logout or after SessionTTLMs;
// the token itself is kept nowhere) that are named admins or viewers.
// Viewers only read, and see only the resources the resource policy
// (Config.Authorizer, verb see) lets them see; admins see every resource.
// Every action — raise a floor, revoke issuer epochs,
// resume a paused resource at a gate, break a lock — needs an admin (or,
// to break a lock, an identity the policy grants break on it), a
// confirmation page whose form carries a single-use token bound to the
// operator, the action and its values (5 minutes), the confirmation typed
// by hand, and is recorded in serve's log as an "admin action" line with
// via=dashboard; so is every refusal of one.
//
// Gates push their state to ReportPath (gate/report); only identities
// named as gate reporters may, as JSON (415 otherwise), and what the
// policy does not let the gate see is dropped from its report. A resume is queued for the gate as a
// command signed by the registry's key, delivered in the answer to the
// gate's next report, applied and recorded by the gate itself, and its
// outcome comes back with the report after.
//
// Everything kept is in memory and bounded: GatesMax gates (forgotten
// GateForgetMs after their last report), DecisionsKeptMax decisions per
// gate, KnownResourcesMax resource names, ActionsKeptMax actions. A
// restart of serve starts empty; each replica shows what it was told.
package dashboard
