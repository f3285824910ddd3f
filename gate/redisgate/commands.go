package redisgate

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// Command is one Redis command of the business change, as data: the
// command's name, then its arguments, each a string, []byte, integer,
// float or bool (as redis.Client.Do takes them). For example:
//
//	redisgate.Command{"HSET", g.KeysOf(r).Tag + ":invoice", "total", 42}
//
// The gate runs the commands in the same atomic step as its own writes:
// in the MULTI/EXEC of a cold read, or in its compare-and-set script.
// Keys should start with Keys.Tag so that, on a Redis Cluster, they
// share the resource's slot.
type Command []any

// BusinessFunc makes the protected change: it returns the commands to
// run with the receipt. It runs once per commit attempt (so possibly
// more than once) and must have no other effect. It may read Redis
// through its own client, but nothing it read is compared at commit:
// make each command right whatever the key holds (HINCRBY rather than a
// read and a SET), or keep the key written only under the fence.
// Returning an error writes nothing.
type BusinessFunc func(ctx context.Context) ([]Command, error)

// ErrCommand: a business command is malformed (empty, a non-string name,
// an argument of a type Redis cannot take). Nothing was written.
var ErrCommand = errors.New("redisgate: malformed business command")

// business runs fn and checks what it returned.
func business(ctx context.Context, fn BusinessFunc) ([]Command, error) {
	cmds, err := fn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBusiness, err)
	}
	for i, c := range cmds {
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%w: command %d: %w", ErrCommand, i+1, err)
		}
	}
	return cmds, nil
}

func (c Command) check() error {
	if len(c) == 0 {
		return errors.New("empty")
	}
	if name, ok := c[0].(string); !ok || name == "" {
		return fmt.Errorf("name %#v is not a command name", c[0])
	}
	for i, a := range c[1:] {
		switch a.(type) {
		case string, []byte, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, bool:
		default:
			return fmt.Errorf("argument %d has type %T", i+1, a)
		}
	}
	return nil
}

// gateWrites are the gate's own writes for decision d, as commands: the
// state (an accept or a pause), the receipt and its operation index (an
// accept), the records. blob is the state key's bytes d was decided on;
// after is what they are once the writes committed.
func (g *Gate) gateWrites(k Keys, blob string, d gate.Decision, recs []stored.Record) (out []Command, after string) {
	after = blob
	if d.Store {
		after = stateBlob(d.State)
		out = append(out, Command{"SET", k.State, after})
	}
	if d.Outcome == gate.Accepted {
		r := d.Receipt
		f := receiptField(r.FenceToken, r.SegmentSeq)
		out = append(out, Command{"HSET", k.Receipts, f, r.AppendJSON(make([]byte, 0, 512))},
			Command{"RPUSH", k.op(r.OperationID), f})
	}
	for _, rec := range recs {
		out = append(out, Command{"RPUSH", k.list(rec.Kind), stored.Encode(rec)})
	}
	return out, after
}

// stateBlob is the state's stored bytes: the value of the state key, and
// what the compare-and-set compares byte for byte.
func stateBlob(st gate.FenceState) string {
	return string(stored.AppendFenceState(make([]byte, 0, stateBlobCap), st))
}

// stateBlobCap is the buffer a state's bytes are appended to: a state
// with a short resource name and both digests is about 370 bytes.
const stateBlobCap = 512

// flatten lays commands out for the script: each as its argument count,
// then its arguments.
func flatten(out []any, cmds []Command) []any {
	for _, c := range cmds {
		out = append(out, strconv.Itoa(len(c)))
		out = append(out, c...)
	}
	return out
}

func (k Keys) list(kind string) string {
	switch kind {
	case stored.RecordAlarm:
		return k.Alarms
	case stored.RecordQuarantine:
		return k.Quarantine
	case stored.RecordShadow:
		return k.Shadow
	}
	return k.Actions
}
