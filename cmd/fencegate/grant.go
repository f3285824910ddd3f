package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/grant"
)

func init() { register(newGrantCmd) }

func newGrantCmd() *cobra.Command {
	c := parentCommand("grant", "inspect, sign and verify lockGrant.v1 / grantStatus.v1 messages",
		`Work with the registry's messages by hand. A message is read from FILE, or
from standard input when FILE is -; the strict parser names the field and
the reason of anything non-canonical.`)
	inspect := &cobra.Command{
		Use:   "inspect FILE|-",
		Short: "print a message's fields and digest, or the field that is wrong",
		Args:  exactArgs("FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			m, err := readMessage(args[0])
			if err != nil {
				return err
			}
			printMessage(c.OutOrStdout(), m)
			return nil
		},
	}
	var bundle, proof string
	verify := &cobra.Command{
		Use:   "verify --bundle BUNDLE --proof PROOF FILE|-",
		Short: "verify a proof over a message; exit 1 on rejection, with its stable code",
		Args:  exactArgs("FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			if bundle == "" || proof == "" {
				return usagef("--bundle and --proof are required")
			}
			m, err := readMessage(args[0])
			if err != nil {
				return err
			}
			b, err := grant.LoadBundle(bundle)
			if err != nil {
				return err
			}
			printMessage(c.OutOrStdout(), m)
			return printVerdict(c.OutOrStdout(), grant.NewVerifier(b, -1).Verify(m, proof))
		},
	}
	verify.Flags().StringVar(&bundle, "bundle", "", "trust bundle file")
	verify.Flags().StringVar(&proof, "proof", "", "proof text (sig:<keyId>:<b64> or mac:<keyId>:<b64>)")
	var key string
	sign := &cobra.Command{
		Use:   "sign --key KEYFILE FILE|-",
		Short: "print the proof a key makes over a message",
		Args:  exactArgs("FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			if key == "" {
				return usagef("--key is required: the signing key file")
			}
			k, err := grant.LoadKeyFile(key)
			if err != nil {
				return err
			}
			m, err := readMessage(args[0])
			if err != nil {
				return err
			}
			p, err := k.Sign(m)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), p)
			return nil
		},
	}
	sign.Flags().StringVar(&key, "key", "", "key file")
	example := &cobra.Command{
		Use:   "example",
		Short: "sign a grant with a throwaway key and show a forged, cross-type and retired proof rejected",
		RunE:  func(c *cobra.Command, _ []string) error { return runGrantExample(c.OutOrStdout()) },
	}
	c.AddCommand(inspect, verify, sign, example)
	return c
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
