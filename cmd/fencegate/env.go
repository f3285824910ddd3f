package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envPrefix starts the name of every environment variable fencegate reads.
const envPrefix = "FENCEGATE_"

// envAnnotation marks a flag that an environment variable may set; its
// value is the variable's name.
const envAnnotation = "fencegate_env"

// envName is the variable of a flag: FENCEGATE_ and the flag's name in
// upper case, dashes as underscores (--data-dir → FENCEGATE_DATA_DIR).
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// bindEnv lets FENCEGATE_<NAME> set each named flag of fs (every flag when
// names is empty) and says so in the flag's help.
func bindEnv(fs *pflag.FlagSet, names ...string) {
	mark := func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		v := envName(f.Name)
		_ = fs.SetAnnotation(f.Name, envAnnotation, []string{v})
		f.Usage += " [env " + v + "]"
	}
	if len(names) == 0 {
		fs.VisitAll(mark)
		return
	}
	for _, n := range names {
		f := fs.Lookup(n)
		if f == nil {
			panic("fencegate: bindEnv: no flag --" + n)
		}
		mark(f)
	}
}

// applyEnv sets each env-bound flag of c that the command line did not set
// from its variable, if that is set. A value the flag refuses is a usage
// error naming the variable. Runs before the command does anything.
func applyEnv(c *cobra.Command, lookup func(string) (string, bool)) error {
	var err error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		names := f.Annotations[envAnnotation]
		if err != nil || f.Changed || len(names) == 0 {
			return
		}
		v, ok := lookup(names[0])
		if !ok {
			return
		}
		if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
			err = sv.Replace(splitList(v))
		} else {
			err = f.Value.Set(v)
		}
		if err != nil {
			err = usagef("%s=%q: invalid value for --%s: %v", names[0], v, f.Name, err)
			return
		}
		f.Changed = true
	})
	return err
}

// splitList splits a list-valued variable on commas, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// envFlagNames lists the variables of c's env-bound flags, for docs/tests.
func envFlagNames(c *cobra.Command) []string {
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if names := f.Annotations[envAnnotation]; len(names) > 0 {
			out = append(out, fmt.Sprintf("%s\t--%s", names[0], f.Name))
		}
	})
	return out
}
