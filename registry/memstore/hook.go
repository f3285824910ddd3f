package memstore

import (
	"errors"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// errAfterHook: a Committed read after its hook returned, when the state
// it described may be gone.
var errAfterHook = errors.New("memstore: Committed read after its hook returned")

// Committed is one successful commit as a commit hook sees it: what the
// write touched, and the stored state just after it. Its accessors return
// copies the hook owns, as Read does, so nothing a hook does with them can
// change the store or the committer's values. They are valid only while
// the hook runs.
type Committed struct {
	Revision      uint64
	Resource      string // the write's resource ("" for none)
	RecordWritten bool   // the write put the resource's record
	// Members are the member records a set write put (registry.Write
	// Members with a Record), in its order; Record reads each.
	Members         []string
	SettingsWritten bool                   // the write put the settings
	Requests        []lockstate.RequestKey // request entries the write put or deleted, in its order
	// KeyHistoryWritten: the commit was a CommitKeyHistory (which writes
	// nothing else).
	KeyHistoryWritten bool

	s *Store
}

// CommitHook is called once for each successful Commit (and
// CommitKeyHistory), with the store's
// lock held: in revision order, after the write is applied and before
// Commit returns, so the state it reads is exactly the commit's. It must
// not call the store (that would deadlock) and should be quick, since
// every other caller waits for it.
type CommitHook func(c *Committed)

// OnCommit sets the store's commit hook; nil removes it. The simulator's
// checker learns the registry's committed decisions through it; a test
// can use it to see every commit in order.
func (s *Store) OnCommit(h CommitHook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// Record returns the resource's record as stored after the commit (nil
// when the resource has none).
func (c *Committed) Record() (*lockstate.Record, error) {
	switch {
	case c.s == nil:
		return nil, errAfterHook
	case c.Resource == "":
		return nil, nil
	}
	rec, _, err := c.s.recordLocked(c.Resource)
	return rec, err
}

// RecordOf returns resource's record as stored after the commit (nil when
// it has none), whether or not this commit wrote it: a set write's
// members (Members) are read so.
func (c *Committed) RecordOf(resource string) (*lockstate.Record, error) {
	if c.s == nil {
		return nil, errAfterHook
	}
	rec, _, err := c.s.recordLocked(resource)
	return rec, err
}

// Settings returns the settings as stored after the commit.
func (c *Committed) Settings() (lockstate.Settings, error) {
	if c.s == nil {
		return lockstate.Settings{}, errAfterHook
	}
	return c.s.settingsLocked()
}

// Request returns the request entry stored under key after the commit
// (nil when absent), whether or not this commit wrote it.
func (c *Committed) Request(key lockstate.RequestKey) (*lockstate.RequestEntry, error) {
	if c.s == nil {
		return nil, errAfterHook
	}
	e, _, err := c.s.requestLocked(key)
	return e, err
}

// runHookLocked calls the hook, if any, for the commit of w at rev.
func (s *Store) runHookLocked(w *registry.Write, rev uint64) {
	if s.hook == nil {
		return
	}
	c := &Committed{Revision: rev, Resource: w.Resource, RecordWritten: w.Record != nil, SettingsWritten: w.Settings != nil, s: s}
	for _, m := range w.Members {
		if m.Record != nil {
			c.Members = append(c.Members, m.Resource)
		}
	}
	if len(w.Requests) > 0 {
		c.Requests = make([]lockstate.RequestKey, len(w.Requests))
		for i, rw := range w.Requests {
			c.Requests[i] = rw.Key
		}
	}
	s.hook(c)
	c.s = nil // a Committed kept past its call reads nothing (errAfterHook)
}
