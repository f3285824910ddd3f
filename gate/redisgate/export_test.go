package redisgate

// WithoutWatch makes g read the state without WATCH: the negative
// control's mutant, deciding on a state other writers may change before
// its EXEC.
func WithoutWatch(g *Gate) { g.noWatch = true }
