//go:build unix

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client/lockexec"
	"github.com/fencegate/fencegate/grant"
)

func init() { register(newEnvelopeCmd) }

func newEnvelopeCmd() *cobra.Command {
	var seq uint64
	var digest, payloadFile, resource string
	c := &cobra.Command{
		Use:   "envelope --seq N (--payload-digest sha256:HEX | --payload-file FILE)",
		Short: "inside fencegate lock: print the envelope (JSON gate.Mutation) for the next write",
		Long: `Print the envelope for one write of the child that fencegate lock runs: the
grant, its proof, a fresh status proof, the operation ID, the fence and the
segment, as the JSON gate.Mutation a gate-protected service takes. It asks
the lock's helper (FENCEGATE_ENVELOPE_SOCKET) and exits 1, printing
nothing on stdout, once ownership is not certain: then do not write.

--payload-digest is the digest of the payload as the service computes it;
--payload-file takes SHA-256 over the file's bytes, for services that
digest the raw request body.

Under a lock set (fencegate lock a b -- CMD) --resource names the member
whose gate the write goes to: the envelope carries that member's grant and
fence, and each member counts its own segments.`,
		Example: `  envelope=$(fencegate envelope --seq 1 --payload-file batch.json) || exit 1
  curl -d "{\"mutation\": $envelope, …}" https://ledger:8443/v1/entries`,
		RunE: func(c *cobra.Command, _ []string) error {
			socket := os.Getenv(lockexec.EnvEnvelopeSocket)
			switch {
			case socket == "":
				return usagef("%s is not set: run this inside fencegate lock", lockexec.EnvEnvelopeSocket)
			case seq == 0:
				return usagef("--seq is required: the segment number, 1 for the first write of the operation")
			case (digest == "") == (payloadFile == ""):
				return usagef("give --payload-digest or --payload-file")
			}
			if payloadFile != "" {
				b, err := os.ReadFile(payloadFile)
				if err != nil {
					return err
				}
				digest = grant.Digest(sha256.Sum256(b)).String()
			} else if _, err := grant.ParseDigest(digest); err != nil {
				return usagef("--payload-digest: %v", err)
			}
			q := url.Values{"seq": {fmt.Sprint(seq)}, "payloadDigest": {digest}}
			if resource != "" {
				q.Set("resource", resource)
			}
			resp, err := lockexec.HelperClient(socket).Get("http://lock" + lockexec.EnvelopePath + "?" + q.Encode())
			if err != nil {
				return fmt.Errorf("the lock's helper does not answer (has fencegate lock ended?): %w", err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if err != nil {
				return err
			}
			if resp.StatusCode != 200 {
				var he lockexec.HelperError
				_ = json.Unmarshal(b, &he)
				return fmt.Errorf("no envelope: %s: %s", he.Code, strings.TrimSpace(he.Message))
			}
			_, err = c.OutOrStdout().Write(b)
			return err
		},
	}
	c.Flags().Uint64Var(&seq, "seq", 0, "segment number of this write (1, 2, 3, … in order)")
	c.Flags().StringVar(&digest, "payload-digest", "", "the payload's digest, sha256:HEX")
	c.Flags().StringVar(&payloadFile, "payload-file", "", "file whose SHA-256 is the payload digest")
	c.Flags().StringVar(&resource, "resource", "", "under a lock set: the member the write is for (required there)")
	c.AddCommand(newEnvelopeSettleCmd())
	return c
}

func newEnvelopeSettleCmd() *cobra.Command {
	var seq uint64
	var outcome, resource string
	c := &cobra.Command{
		Use:   "settle --seq N --outcome CODE",
		Short: "inside fencegate lock: report the resource's answer to an envelope, so the lock need not wait for it",
		Long: `Report the resource's answer to the envelope of segment N: the gate's
outcome code (ACCEPTED, REPLAYED, STALE_OWNER, …). When the child exits,
fencegate lock releases the lease at once if every envelope it handed out
is settled; an unsettled envelope makes the release wait until its status
proof can no longer be accepted (a copy still in the network could land
until then), about three seconds.

Settle only with an answer the resource gave. A write whose answer was
lost must stay unsettled. SEGMENT_GAP, RESOURCE_PAUSED and NOT_HELD are
not final (a copy may still be accepted later): they are recorded and the
release still waits.`,
		Example: `  envelope=$(fencegate envelope --seq 1 --payload-file batch.json) || exit 1
  outcome=$(curl -s -d "{\"mutation\": $envelope, …}" https://ledger:8443/v1/entries | jq -r .outcome)
  fencegate envelope settle --seq 1 --outcome "$outcome"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			socket := os.Getenv(lockexec.EnvEnvelopeSocket)
			switch {
			case socket == "":
				return usagef("%s is not set: run this inside fencegate lock", lockexec.EnvEnvelopeSocket)
			case seq == 0 || outcome == "":
				return usagef("--seq and --outcome are required")
			}
			body, _ := json.Marshal(lockexec.SettleRequest{Resource: resource, Seq: seq, Outcome: outcome})
			resp, err := lockexec.HelperClient(socket).Post("http://lock"+lockexec.SettlePath, "application/json", bytes.NewReader(body))
			if err != nil {
				return fmt.Errorf("the lock's helper does not answer (has fencegate lock ended?): %w", err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if err != nil {
				return err
			}
			if resp.StatusCode != 200 {
				var he lockexec.HelperError
				_ = json.Unmarshal(b, &he)
				return usagef("%s: %s", he.Code, strings.TrimSpace(he.Message))
			}
			var a lockexec.SettleAnswer
			if err := json.Unmarshal(b, &a); err == nil && !a.Settled {
				fmt.Fprintf(c.ErrOrStderr(), "fencegate envelope settle: %s is not final: the release still waits for segment %d's proof\n", a.Outcome, a.Seq)
			}
			return nil
		},
	}
	c.Flags().Uint64Var(&seq, "seq", 0, "segment number of the envelope the resource answered")
	c.Flags().StringVar(&outcome, "outcome", "", "the resource's outcome code (ACCEPTED, REPLAYED, STALE_OWNER, …)")
	c.Flags().StringVar(&resource, "resource", "", "under a lock set: the member the envelope was for (required there)")
	return c
}
