// Command fencegate is fencegate's one binary: the registry server, the
// demo, the simulator, the lock wrapper and the operator commands. Each
// subcommand lives in its own file and registers a constructor; logic
// belongs in the packages.
//
// Exit status: 0 on success (and for --help and --version), 1 when the
// command ran and failed, 2 for a usage error (bad flag or argument, found
// before the command did anything). `fencegate lock` exits with its
// child's status.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/fencegate/fencegate/wire"
	"github.com/spf13/cobra"
)

// subcommands are the constructors of the top-level commands; each
// subcommand file appends its own from init. A constructor builds a fresh
// command tree every time, so one process (a test) can run many commands.
var subcommands []func() *cobra.Command

// register adds a top-level command constructor.
func register(newCmd ...func() *cobra.Command) { subcommands = append(subcommands, newCmd...) }

// usageError is a mistake in the command line: exit status 2, and the
// message ends with where to read the usage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError; its message should say what to do.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitError carries an exit status of its own (the lock wrapper's child's)
// with nothing further to print.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %s\n", cmd.CommandPath(), userMessage(err))
		return 1
	}
}

// userMessage is err as a user reads it: a refusal that says what the
// user needs next (a *wire.BusyError names the holder) in one line with
// its stable code, without the layers it passed through; any other error
// as it is.
func userMessage(err error) string {
	if be := (*wire.BusyError)(nil); errors.As(err, &be) {
		return fmt.Sprintf("%s [%s]", be.Error(), be.Code())
	}
	return err.Error()
}

// newRoot builds the whole command tree, writing to stdout and stderr.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "fencegate",
		Short: "a lock service that makes stale writers harmless",
		Long: `fencegate issues signed, fenced lock grants (fencegate serve) and checks them
at the protected resource (package gate), so that a worker that paused past
its lease cannot overwrite its successor's result.

Start with:  fencegate demo
Every flag of serve and of the client commands can also be set through an
environment variable, named in the flag's help (FENCEGATE_...); a flag on
the command line wins.`,
		Version:       versionString(buildInfo()),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE:          func(c *cobra.Command, _ []string) error { return c.Help() },
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			if err := applyEnv(c, os.LookupEnv); err != nil {
				return err
			}
			return absPaths(c)
		},
	}
	root.SetOut(stdout) // before the completion command, which keeps the writer it sees
	root.SetErr(stderr)
	root.SetVersionTemplate("fencegate {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &usageError{err} })
	for _, newCmd := range subcommands {
		root.AddCommand(newCmd())
	}
	root.InitDefaultCompletionCmd() // now, not at Execute: so the walk below covers it
	setArgsDefaults(root)
	return root
}

// setArgsDefaults gives every command without an Args rule noArgs, so a
// stray argument is a usage error rather than silently ignored, and turns
// every Args error into a usageError.
func setArgsDefaults(c *cobra.Command) {
	if c.Args == nil {
		c.Args = noArgs
	}
	args := c.Args
	c.Args = func(cmd *cobra.Command, a []string) error {
		if err := args(cmd, a); err != nil {
			var ue *usageError
			if errors.As(err, &ue) {
				return err
			}
			return &usageError{err}
		}
		return nil
	}
	for _, sub := range c.Commands() {
		setArgsDefaults(sub)
	}
}

// noArgs refuses any positional argument, suggesting a subcommand when one
// is close.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.HasAvailableSubCommands() {
		msg := fmt.Sprintf("unknown command %q", args[0])
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usagef("%s (commands: %s)", msg, strings.Join(commandNames(c), ", "))
	}
	return usagef("unexpected argument %q", args[0])
}

// exactArgs wants n positional arguments, named in names for the message.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usagef("want %d argument(s) %s, got %d", len(names), strings.Join(names, " "), len(args))
		}
		return nil
	}
}

func commandNames(c *cobra.Command) []string {
	var out []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			out = append(out, s.Name())
		}
	}
	return out
}

// parentCommand is a command that only groups subcommands: run bare, it
// prints its help and exits 0; with an unknown word, a usage error.
func parentCommand(use, short, long string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
}
