package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/fencegate/fencegate/grant"
)

func init() {
	register(command{name: "grant", summary: "inspect, sign and verify lockGrant.v1 / grantStatus.v1 messages", run: runGrant})
}

const grantUsage = `usage:
  fencegate grant inspect FILE|-
  fencegate grant verify --bundle BUNDLE --proof PROOF FILE|-
  fencegate grant sign   --key KEYFILE FILE|-
  fencegate grant example`

func runGrant(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: missing subcommand\n%s", errUsage, grantUsage)
	}
	fs := newFlags("grant "+args[0], stderr)
	bundle := fs.String("bundle", "", "verify: trust bundle file")
	proof := fs.String("proof", "", "verify: proof text (sig:<keyId>:<b64> or mac:<keyId>:<b64>)")
	key := fs.String("key", "", "sign: key file")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "example":
		return runGrantExample(stdout)
	case "inspect", "verify", "sign":
	default:
		return fmt.Errorf("%w: unknown subcommand %q\n%s", errUsage, args[0], grantUsage)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: want one message file (or - for stdin)", errUsage)
	}
	m, err := readMessage(fs.Arg(0))
	if err != nil {
		return err
	}
	switch args[0] {
	case "sign":
		k, err := grant.LoadKeyFile(*key)
		if err != nil {
			return err
		}
		p, err := k.Sign(m)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, p)
		return nil
	case "verify":
		printMessage(stdout, m)
		b, err := grant.LoadBundle(*bundle)
		if err != nil {
			return err
		}
		return printVerdict(stdout, grant.NewVerifier(b, -1).Verify(m, *proof))
	}
	printMessage(stdout, m)
	return nil
}

// readMessage parses a grant or a status, telling them apart by the schema
// line; the strict parser then rejects anything non-canonical.
func readMessage(path string) (grant.Message, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, grant.MessageBytesMax+1))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(b, []byte("schema: "+grant.SchemaStatus+"\n")) {
		return grant.ParseStatus(b)
	}
	return grant.ParseGrant(b)
}

func printMessage(w io.Writer, m grant.Message) {
	fmt.Fprintf(w, "%s", m.Encode())
	fmt.Fprintf(w, "digest: %s\n", m.Digest())
}

// printVerdict prints "verdict: OK" or the rejection with its stable code;
// a rejection is also the command's error (exit status 1).
func printVerdict(w io.Writer, err error) error {
	if err == nil {
		fmt.Fprintln(w, "verdict: OK")
		return nil
	}
	fmt.Fprintf(w, "verdict: REJECTED %s: %v\n", grant.CodeOf(err), err)
	return fmt.Errorf("rejected: %s", grant.CodeOf(err))
}
