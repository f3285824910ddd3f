package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/fencegate/fencegate/registry"
)

// NoteBytesMax bounds an admin call's note, 1 KiB: a sentence or a ticket
// reference, not a document.
const NoteBytesMax = 1024

// checkNote refuses a note that is too long or not printable UTF-8 (it
// goes into a log line as it is).
func checkNote(note string) error {
	if len(note) > NoteBytesMax {
		return fmt.Errorf("%w: note: %d bytes, at most %d", registry.ErrInvalid, len(note), NoteBytesMax)
	}
	if !utf8.ValidString(note) {
		return fmt.Errorf("%w: note: not UTF-8", registry.ErrInvalid)
	}
	for _, r := range note {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: note: control character %U", registry.ErrInvalid, r)
		}
	}
	return nil
}

// audit records one admin action: who (the authenticated admin identity),
// what, on which resource, the value asked for, the operator's note and
// the outcome. It goes to Config.Logger at INFO with msg "admin action",
// attribute audit=true, so a log pipeline can route it to an audit store;
// the registry keeps no audit table of its own.
func (s *Server) audit(ctx context.Context, operator, action, resource string, value uint64, note string, err error) {
	outcome := outcomeOK
	if err != nil {
		outcome = codeOf(err)
	}
	s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "admin action",
		slog.Bool("audit", true), slog.String("operator", operator), slog.String("action", action),
		slog.String("resource", resource), slog.Uint64("value", value), slog.String("note", note),
		slog.String("outcome", outcome))
}
