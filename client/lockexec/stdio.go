//go:build unix

package lockexec

import (
	"io"
	"os"
	"time"
)

// stdioDrainMax bounds how long Run waits, once the child's process group
// is ended, for the last of its output: a process that left the group (a
// daemon) may hold the pipe open for good.
const stdioDrainMax = time.Second

// stdio gives the child files for its standard streams. A stream that is
// not a file already gets a pipe this process copies, so that the child's
// exit is seen when the child exits — exec.Cmd.Wait would wait for every
// process holding the pipe (the child's own children too) — and what is
// left of the group can be ended before its output is drained.
type stdio struct {
	in, out, errOut *os.File   // the child's ends
	parentEnds      []*os.File // closed once the child started
	copies          []chan struct{}
	stdinWriter     *os.File // closed once the child exited
}

func newStdio(in io.Reader, out, errOut io.Writer) (*stdio, error) {
	s := &stdio{}
	var err error
	if s.in, err = s.input(in); err != nil {
		s.close()
		return nil, err
	}
	if s.out, err = s.output(out); err != nil {
		s.close()
		return nil, err
	}
	if s.errOut, err = s.output(errOut); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *stdio) input(r io.Reader) (*os.File, error) {
	if f, ok := r.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.parentEnds, s.stdinWriter = append(s.parentEnds, pr), pw
	go func() { _, _ = io.Copy(pw, r); pw.Close() }() // ends at the child's exit, or r's end
	return pr, nil
}

func (s *stdio) output(w io.Writer) (*os.File, error) {
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.parentEnds = append(s.parentEnds, pw)
	done := make(chan struct{})
	s.copies = append(s.copies, done)
	go func() { _, _ = io.Copy(w, pr); pr.Close(); close(done) }()
	return pw, nil
}

// started closes this process's copies of the child's ends.
func (s *stdio) started() {
	for _, f := range s.parentEnds {
		f.Close()
	}
	s.parentEnds = nil
}

// drain waits, at most stdioDrainMax, for the child's output to end, and
// stops feeding its input.
func (s *stdio) drain() {
	if s.stdinWriter != nil {
		s.stdinWriter.Close()
	}
	t := time.NewTimer(stdioDrainMax)
	defer t.Stop()
	for _, c := range s.copies {
		select {
		case <-c:
		case <-t.C:
			return
		}
	}
}

// close undoes a failed start.
func (s *stdio) close() {
	s.started()
	s.drain()
}
