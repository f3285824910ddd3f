package main

import (
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pathAnnotation marks a flag whose value is a file or directory path.
const pathAnnotation = "fencegate_path"

// pathFlags marks the named flags of fs as paths: absPaths resolves them
// against the working directory before the command runs, so a relative
// path means the same wherever it is used or recorded (serve writes the
// --key path into the trust bundle, which reads it from --data-dir).
func pathFlags(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if fs.Lookup(n) == nil {
			panic("fencegate: pathFlags: no flag --" + n)
		}
		_ = fs.SetAnnotation(n, pathAnnotation, []string{"true"})
	}
}

// absPaths makes every path flag of c that holds a relative path
// absolute, against the working directory. Runs before the command does
// anything, after the environment has set its flags.
func absPaths(c *cobra.Command) error {
	var err error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || len(f.Annotations[pathAnnotation]) == 0 {
			return
		}
		v := f.Value.String()
		if v == "" || filepath.IsAbs(v) {
			return
		}
		abs, aerr := filepath.Abs(v)
		if aerr != nil {
			err = usagef("--%s %q: %v", f.Name, v, aerr)
			return
		}
		err = f.Value.Set(abs)
	})
	return err
}
