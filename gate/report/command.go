package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// CommandBytesMax bounds one command's JSON, 4 KiB.
const CommandBytesMax = 4096

// Resumer applies a resume at the gate and records it with the operator
// and note in the gate's own operator actions (sqlgate.Gate.Resume, which
// applies adapt.ResumeAction). It must refuse with an error wrapping
// gate.ErrResumeRefused when the gate's rule refuses.
type Resumer interface {
	Resume(ctx context.Context, resource string, floor uint64, operator, note string) error
}

// CommandConfig lets a Reporter apply the registry's commands.
type CommandConfig struct {
	// Identity is this gate's identity as the registry authenticates its
	// reports; a command addressed to another gate is rejected. Required.
	Identity string
	// Verifier checks the registry's proof against the gate's trust
	// bundle (the one its writes are verified with). Required.
	Verifier *grant.Verifier
	// Resumer applies resumes. Required.
	Resumer Resumer
	// SkewMs bounds the disagreement of the gate's clock with the
	// registry's when judging expiry. Optional, defaults to 500.
	SkewMs uint64
}

func (c *CommandConfig) check() error {
	if c.Verifier == nil || c.Resumer == nil {
		return errors.New("report: CommandConfig needs a Verifier and a Resumer")
	}
	if err := grant.ValidateOwner(c.Identity); err != nil {
		return fmt.Errorf("report: CommandConfig.Identity: %w", err)
	}
	if c.SkewMs == 0 {
		c.SkewMs = 500
	}
	return nil
}

// applyAll applies at most CommandsPerAnswerMax commands, in order.
func (r *Reporter) applyAll(ctx context.Context, cmds []SignedCommand) {
	for _, sc := range cmds[:min(len(cmds), CommandsPerAnswerMax)] {
		res, final := r.apply(ctx, sc)
		res.Message = Cut(res.Message)
		r.result(res, final)
		r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "gate command", slog.Bool("audit", true), slog.String("id", res.ID),
			slog.String("outcome", res.Outcome), slog.String("message", res.Message))
	}
}

// apply verifies one command and applies it; final says whether the same
// command must get the same answer if delivered again.
func (r *Reporter) apply(ctx context.Context, sc SignedCommand) (Result, bool) {
	cmd, err := ParseCommand(sc.Command)
	if err != nil {
		return Result{ID: cmd.ID, Outcome: ResultRejected, Message: err.Error()}, false
	}
	r.mu.Lock()
	prior, seen := r.seen[cmd.ID]
	r.mu.Unlock()
	if seen {
		return prior, true
	}
	c := r.cfg.Commands
	if c == nil {
		return Result{ID: cmd.ID, Outcome: ResultDisabled, Message: "this gate takes no commands from the registry"}, true
	}
	if err := c.Verifier.VerifyDigest(grant.SchemaGateCommand, grant.CommandDigest([]byte(sc.Command)), cmd.IssuerEpoch, sc.Proof); err != nil {
		return Result{ID: cmd.ID, Outcome: ResultRejected, Message: "proof: " + err.Error()}, true
	}
	if err := c.admit(cmd, r.startedMs, r.cfg.Clock.Now()); err != nil {
		return Result{ID: cmd.ID, Outcome: ResultRejected, Message: err.Error()}, true
	}
	note := fmt.Sprintf("%s (dashboard command %s)", cmd.Note, cmd.ID)
	err = c.Resumer.Resume(ctx, cmd.Resource, cmd.Floor, cmd.Operator, note)
	switch {
	case err == nil:
		return Result{ID: cmd.ID, Outcome: ResultApplied, Message: fmt.Sprintf("resumed %s with floor %d", cmd.Resource, cmd.Floor)}, true
	case errors.Is(err, gate.ErrResumeRefused):
		return Result{ID: cmd.ID, Outcome: ResultRefused, Message: err.Error()}, true
	}
	return Result{ID: cmd.ID, Outcome: ResultFailed, Message: err.Error()}, false
}

// admit checks what the proof does not: this gate, this action, in time,
// and issued after this Reporter started. The commands a Reporter has
// answered are remembered in memory only, so one issued before it
// started (allowing for the clocks' skew) may have been applied by the
// gate process before a restart: redelivered now, it would apply again.
// It is refused instead; the operator confirms it again.
func (c *CommandConfig) admit(cmd Command, startedMs int64, now time.Time) error {
	skew := int64(c.SkewMs)
	switch nowMs := now.UnixMilli(); {
	case cmd.IssuedAtMs < startedMs+skew:
		return fmt.Errorf("report: command issued at %d ms, before this gate process started (%d ms, skew bound %d ms): it may have been applied before a restart; confirm it again",
			cmd.IssuedAtMs, startedMs, skew)
	case cmd.Gate != c.Identity:
		return fmt.Errorf("report: command for gate %q, this is %q", cmd.Gate, c.Identity)
	case cmd.Action != ActionResume:
		return fmt.Errorf("report: unknown action %q", cmd.Action)
	case cmd.ExpiresAtMs-cmd.IssuedAtMs > CommandTTLMs || cmd.ExpiresAtMs < cmd.IssuedAtMs:
		return fmt.Errorf("report: command lives %d ms, at most %d", cmd.ExpiresAtMs-cmd.IssuedAtMs, CommandTTLMs)
	case nowMs > cmd.ExpiresAtMs+skew:
		return fmt.Errorf("report: command expired %d ms ago", nowMs-cmd.ExpiresAtMs)
	case cmd.IssuedAtMs > nowMs+skew:
		return fmt.Errorf("report: command issued %d ms in the future (clock skew over %d ms?)", cmd.IssuedAtMs-nowMs, skew)
	}
	return nil
}

// ParseCommand decodes a command strictly and checks its fields; the ID
// is returned whenever it could be read, so a rejection can name it.
func ParseCommand(s string) (Command, error) {
	var cmd Command
	if len(s) > CommandBytesMax {
		return cmd, fmt.Errorf("%w: command of %d bytes, at most %d", ErrInvalid, len(s), CommandBytesMax)
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.DisallowUnknownFields()
	if err := d.Decode(&cmd); err != nil || d.More() {
		return cmd, fmt.Errorf("%w: command: not one JSON object of the command's fields (%v)", ErrInvalid, err)
	}
	switch {
	case cmd.Schema != grant.SchemaGateCommand:
		return cmd, invalid("command schema %q", cmd.Schema)
	case cmd.ID == "" || len(cmd.ID) > 64:
		return cmd, invalid("command id %q", cmd.ID)
	case cmd.Floor == 0:
		return cmd, invalid("command floor 0")
	}
	if err := resource(cmd.Resource); err != nil {
		return cmd, err
	}
	if err := grant.ValidateOwner(cmd.Operator); err != nil {
		return cmd, invalid("command operator: %v", err)
	}
	return cmd, texts("note", cmd.Note)
}
