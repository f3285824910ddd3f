package zktest

import (
	"errors"
	"os"
	"os/exec"
)

// process is a JVM a Server or a Member started: the command, and a
// channel closed once it has exited.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startProcess runs argv with its output in a new file at logPath; it
// does not wait for the process to serve.
func startProcess(argv []string, logPath string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	p := &process{cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// running reports whether p was started and has not exited.
func (p *process) running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill kills p (as a crash would) and waits for it to exit; a process
// never started or already gone is left as it is.
func (p *process) kill() error {
	if !p.running() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.exited
	return nil
}
