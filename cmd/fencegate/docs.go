package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() { register(newDocsCmd) }

// cliDocsDir is where the generated CLI reference lives in the repository;
// TestCLIDocsUpToDate fails when it differs from what the commands say.
const cliDocsDir = "docs/cli"

func newDocsCmd() *cobra.Command {
	var dir, format string
	c := &cobra.Command{
		Use:   "docs --dir DIR",
		Short: "write the command-line reference: one markdown page (or man page) per command",
		Long: `Write the reference of every command, generated from the same definitions
as --help. The repository's copy is docs/cli (regenerate it with
  go run ./cmd/fencegate docs --dir docs/cli
after changing a command or flag; a test checks it is up to date).`,
		Example: "  fencegate docs --dir docs/cli\n  fencegate docs --dir /usr/local/share/man/man1 --format man",
		RunE: func(c *cobra.Command, _ []string) error {
			if dir == "" {
				return usagef("--dir is required: where to write the pages")
			}
			if format != "markdown" && format != "man" {
				return usagef("--format %q: want markdown or man", format)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			root := c.Root()
			root.DisableAutoGenTag = true
			var err error
			if format == "man" {
				err = doc.GenManTree(root, &doc.GenManHeader{Title: "FENCEGATE", Section: "1", Source: "fencegate " + root.Version}, dir)
			} else {
				err = doc.GenMarkdownTree(root, dir)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote the %s reference to %s\n", format, dir)
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "directory to write into (created if missing)")
	c.Flags().StringVar(&format, "format", "markdown", "markdown or man")
	return c
}
