package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/fencegate/fencegate/wire"
)

// NoteBytesMax bounds an admin call's note, 1 KiB: a sentence or a ticket
// reference, not a document.
const NoteBytesMax = 1024

// checkNote refuses a note that is too long or not printable UTF-8 (it
// goes into a log line as it is).
func checkNote(note string) error {
	if len(note) > NoteBytesMax {
		return fmt.Errorf("%w: note: %d bytes, at most %d", wire.ErrInvalid, len(note), NoteBytesMax)
	}
	if !utf8.ValidString(note) {
		return fmt.Errorf("%w: note: not UTF-8", wire.ErrInvalid)
	}
	for _, r := range note {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: note: control character %U", wire.ErrInvalid, r)
		}
	}
	return nil
}

// auditCall records one admin call: who (the authenticated identity),
// what, on which resource, the value asked for, the operator's note and
// the outcome. It goes to Config.Logger at INFO with msg "admin action",
// attribute audit=true, so a log pipeline can route it to an audit store;
// the registry keeps no audit table of its own.
//
// Every admin call that names its caller is recorded when it is refused,
// whatever refused it (not an admin: FORBIDDEN; a body not JSON, too
// large or malformed; a note or value the registry refuses), and when a
// call that changes the registry succeeds. A call refused before its
// values were decoded and checked is recorded without them: a refused
// body is never copied into the audit log. A call without an identity
// (UNAUTHENTICATED) has no one to record; its request line shows it.
func (s *Server) auditCall(ctx context.Context, e endpoint, rec *callRecord, code string) {
	if code == wire.CodeUnauthenticated || code == wire.CodeMethodNotAllowed || (code == "" && !e.mutates) {
		return
	}
	v := rec.admin
	if v == nil {
		v = &adminValues{}
	}
	s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "admin action",
		slog.Bool("audit", true), slog.String("operator", rec.caller), slog.String("action", e.action),
		slog.String("resource", v.resource), slog.Uint64("value", v.value), slog.String("note", v.note),
		slog.String("outcome", outcomeOf(code)))
}
