package redisgate

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// casSource is the compare-and-set script. It holds no gate rule — no
// fence, segment, receipt, mode or pause logic: every decision is made
// in Go by adapt.Decider.DecideLocked, and the script only makes sure the
// state that decision was made on is still the stored one. It compares
// the state key (KEYS[1]) with ARGV[1] byte for byte ("" for absent: a
// stored state is never empty). If equal, it runs the commands that
// follow (ARGV[3…], each as its argument count and its arguments: the
// business commands, then the gate's writes Go built) and returns
// {1, n, err}, n the 1-based index of the first command that failed (0
// if none; like EXEC, a failed command does not stop the others).
// Otherwise it writes nothing and returns {0, state, receipt}: the
// stored state and the receipts hash's (KEYS[2]) field ARGV[2], for Go
// to decide again on.
//
// Comparing the state alone suffices because a receipt is written only
// with the state that records its fence and segment, which from then on
// only rise: a state unchanged since the decision means the receipts at
// and above the mutation's fence and segment are unchanged too (the
// WATCH path relies on the same). TestScriptHasNoRule checks the source
// names no gate concept.
const casSource = `local st = redis.call('GET', KEYS[1]) or ''
if st ~= ARGV[1] then
  return {0, st, redis.call('HGET', KEYS[2], ARGV[2]) or ''}
end
local i, n, failed, why = 3, 0, 0, ''
while i <= #ARGV do
  local argc = tonumber(ARGV[i])
  n = n + 1
  local r = redis.pcall(unpack(ARGV, i + 1, i + argc))
  if failed == 0 and type(r) == 'table' and r.err then
    failed, why = n, r.err
  end
  i = i + 1 + argc
end
return {1, failed, why}
`

// casCompare is the comparison a test-only mutant removes.
const casCompare = `if st ~= ARGV[1] then`

var casScript = redis.NewScript(casSource)

// casReply is what one run of the script answered.
type casReply struct {
	ok bool
	// failed is the 1-based index of the first command that failed (0:
	// none) and why its error; set when ok.
	failed int
	why    string
	// state and receipt are the stored values; set when not ok.
	state, receipt string
}

// cas runs the script on snap's state with cmds. When
// ReplicasMin is set, it runs on one connection followed by WAIT, whose
// failure is returned with the committed reply.
func (g *Gate) cas(ctx context.Context, k Keys, field string, snap snapshot, cmds []Command) (casReply, error) {
	args := flatten(append(make([]any, 0, 2+4*len(cmds)), snap.blob, field), cmds)
	keys := []string{k.State, k.Receipts}
	if g.replicas == 0 {
		return parseCAS(g.script.Run(ctx, g.c, keys, args...))
	}
	var rep casReply
	err := g.c.Watch(ctx, func(tx *redis.Tx) error {
		var err error
		if rep, err = parseCAS(g.script.Run(ctx, tx, keys, args...)); err != nil || !rep.ok {
			return err
		}
		return g.waitReplicas(ctx, tx)
	}, k.State) // the key picks the node of a cluster; the WATCH is released at close
	return rep, err
}

func parseCAS(cmd *redis.Cmd) (casReply, error) {
	v, err := cmd.Slice()
	if err != nil {
		return casReply{}, fmt.Errorf("redisgate: compare-and-set: %w", err)
	}
	if len(v) != 3 {
		return casReply{}, fmt.Errorf("redisgate: compare-and-set answered %d values", len(v))
	}
	flag, ok := v[0].(int64)
	if !ok {
		return casReply{}, fmt.Errorf("redisgate: compare-and-set answered %T", v[0])
	}
	if flag == 0 {
		st, ok1 := v[1].(string)
		rc, ok2 := v[2].(string)
		if !ok1 || !ok2 {
			return casReply{}, errors.New("redisgate: compare-and-set: malformed current values")
		}
		return casReply{state: st, receipt: rc}, nil
	}
	n, ok1 := v[1].(int64)
	why, ok2 := v[2].(string)
	if !ok1 || !ok2 {
		return casReply{}, errors.New("redisgate: compare-and-set: malformed result")
	}
	return casReply{ok: true, failed: int(n), why: why}, nil
}
