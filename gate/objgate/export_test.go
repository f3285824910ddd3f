package objgate

import "context"

// OpenUnprobed is Open without the probe: the negative control's way to
// run a gate on a store that ignores conditional writes.
func OpenUnprobed(ctx context.Context, cfg Config) (*Gate, error) { return open(ctx, cfg, false) }
