//go:build unix

// This file is the demo's child processes: started, read and stopped.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/internal/childproc"
)

// child is one process the demo started (internal/childproc runs it);
// its events go on the demo's timeline.
type child struct {
	*childproc.Proc
	d *demo
}

// spawn starts `self args...`. With stdin, the child's stdin is a pipe.
func (d *demo) spawn(ctx context.Context, name string, stdin bool, args ...string) (*child, error) {
	d.mu.Lock()
	logName := fmt.Sprintf("%02d-%s.log", len(d.children)+1, strings.ReplaceAll(name, " ", "-"))
	d.mu.Unlock()
	p, err := childproc.Start(name, d.self, args, stdin, filepath.Join(d.dir, logName))
	if err != nil {
		return nil, err
	}
	c := &child{Proc: p, d: d}
	d.mu.Lock()
	d.children = append(d.children, c)
	d.mu.Unlock()
	return c, nil
}

// waitLine waits for a stdout line matching re and returns its first group.
func (c *child) waitLine(ctx context.Context, re *regexp.Regexp, timeout time.Duration) (group string, err error) {
	err = c.WaitFor(ctx, timeout, "its ready line", func(l string) (bool, error) {
		m := re.FindStringSubmatch(l)
		if m != nil {
			group = m[1]
		}
		return m != nil, nil
	})
	return group, err
}

// waitEvent prints the worker's events on the timeline until one of the
// given kinds arrives, and returns it.
func (c *child) waitEvent(ctx context.Context, kinds ...string) (e ledger.Event, err error) {
	err = c.WaitFor(ctx, demoStepTimeout, fmt.Sprint("an event ", kinds), func(l string) (bool, error) {
		e = ledger.Event{}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			c.d.say(c.Name, l)
			return false, nil
		}
		c.d.say(c.Name, e.Msg)
		if e.Kind == "failed" {
			return true, fmt.Errorf("%s failed: %s", c.Name, e.Msg)
		}
		return slices.Contains(kinds, e.Kind), nil
	})
	return e, err
}

// freeze stops the process for real (SIGSTOP), then queues the line that
// releases its hold, which it can only read once it is resumed.
func (c *child) freeze() error {
	if err := c.Freeze(); err != nil {
		return err
	}
	_, err := io.WriteString(c.Stdin, "go\n")
	return err
}

func (c *child) thaw() error { return c.Thaw() }

// stopAll resumes and terminates every child still running, gracefully
// first (serve shuts its embedded etcd down cleanly).
func (d *demo) stopAll() {
	d.mu.Lock()
	ps := make([]*childproc.Proc, len(d.children))
	for i, c := range d.children {
		ps[i] = c.Proc
	}
	d.mu.Unlock()
	childproc.StopAll(ps, 5*time.Second)
}
