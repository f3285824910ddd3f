package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/client"
)

// Duration flags are checked where they are parsed: a value the command
// could only fail on later (a negative TTL that would wrap to 18446744073709546616
// milliseconds on the wire, a zero whose meaning nobody wrote down) is a
// usage error, exit 2, before any file or network is touched.

// durationRange is what one duration flag accepts.
type durationRange struct {
	// min is the smallest positive value accepted (1ms when zero).
	min time.Duration
	// max, when positive, is the largest value accepted.
	max time.Duration
	// zero is what 0 means, stated in the flag's help; "" refuses 0.
	zero string
	// wholeMs refuses values that are not whole milliseconds (the value
	// goes on the wire in milliseconds).
	wholeMs bool
}

// durationValue is a pflag.Value for a time.Duration within a range.
type durationValue struct {
	p *time.Duration
	r durationRange
}

// durationVar defines a duration flag that refuses, at parse time, any
// value outside r; its help says what 0 means when 0 is accepted.
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string, r durationRange) {
	if r.min <= 0 {
		r.min = time.Millisecond
	}
	*p = def
	if r.zero != "" {
		usage += " (0: " + r.zero + ")"
	}
	fs.Var(&durationValue{p: p, r: r}, name, usage)
}

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s, 1m30s or 500ms")
	}
	if err := d.r.check(v); err != nil {
		return err
	}
	*d.p = v
	return nil
}

// check refuses v when it is outside the range, saying what is accepted.
func (r durationRange) check(v time.Duration) error {
	want := r.want()
	switch {
	case v < 0:
		return fmt.Errorf("%s is negative; want %s", v, want)
	case v == 0 && r.zero == "":
		return fmt.Errorf("0 is not accepted; want %s", want)
	case v > 0 && v < r.min:
		return fmt.Errorf("%s is below %s; want %s", v, shortDuration(r.min), want)
	case r.max > 0 && v > r.max:
		return fmt.Errorf("%s is above %s; want %s", v, shortDuration(r.max), want)
	case r.wholeMs && v%time.Millisecond != 0:
		return fmt.Errorf("%s is not a whole number of milliseconds; want %s", v, want)
	}
	return nil
}

// want says the accepted range in words.
func (r durationRange) want() string {
	s := "at least " + shortDuration(r.min)
	if r.max > 0 {
		s = shortDuration(r.min) + " to " + shortDuration(r.max)
	}
	if r.zero != "" {
		s += ", or 0 (" + r.zero + ")"
	}
	return s
}

// shortDuration is d without trailing zero units: 876000h, not
// 876000h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (d *durationValue) Type() string { return "duration" }

// String is "0" for zero, so a zero default prints no "(default 0s)"
// beside the flag's own words on what 0 means.
func (d *durationValue) String() string {
	if *d.p == 0 {
		return "0"
	}
	return d.p.String()
}

// ttlRange is a lease TTL on the command line: whole milliseconds (it
// travels as ttlMs), at least the shortest the client's margins can keep
// (client.TTLMin, 2s: a shorter lease could not renew before its local
// deadline), at most the grant format's limit. The registry's own limits
// (serve --ttl-min-ms and --ttl-max-ms, 2s and 10m by default) are its
// to judge, and its refusal names them.
var ttlRange = durationRange{min: client.TTLMin(client.Options{}), max: 100 * 365 * 24 * time.Hour, wholeMs: true}

// graceRange is the time between SIGTERM and SIGKILL: 1ms (SIGKILL at
// once) or more.
var graceRange = durationRange{min: time.Millisecond}
