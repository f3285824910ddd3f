package chaos

import (
	"context"
	"time"
)

// supervisePoll is how often the supervisor looks for a replica that
// exited by itself.
const supervisePoll = 500 * time.Millisecond

// supervise starts again, until ctx ends, every serve replica that exited
// while no fault or restart held it down, as a service manager would
// (systemd's Restart=always). serve exits when it cannot reach its store
// at start (on ZooKeeper, no session within zkstore's dial timeout), as
// when it is restarted while the ensemble elects a leader; a replica
// that never exits by itself (etcd runs, so far) is never touched.
func (e *Env) supervise(ctx context.Context) {
	for sleepUntil(ctx, time.Now().Add(supervisePoll)) {
		for _, p := range e.serves {
			started, err := p.startIfDown()
			if err != nil {
				e.cfg.Logf("supervise %s: %v", p.name, err)
			} else if started {
				e.supervised.Add(1)
				e.cfg.Logf("supervise: %s had exited; started it again (log %s)", p.name, p.proc.Log)
			}
		}
	}
}

// hold marks the replica as down on purpose (a fault or a restart is on
// it), so that the supervisor leaves it alone until release.
func (p *party) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
}

// release ends a hold.
func (p *party) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = false
}

// startIfDown starts the replica when it is neither held nor running;
// true when it did.
func (p *party) startIfDown() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held || p.proc.Running() {
		return false, nil
	}
	return true, p.proc.Start()
}
