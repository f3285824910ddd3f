package redisgate

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// WithoutWatch makes g read the state without WATCH and keep no cache,
// so that every write takes the WATCH path: the negative control's
// mutant, deciding on a state other writers may change before its EXEC.
func WithoutWatch(g *Gate) { g.noWatch, g.cache = true, nil }

// WithoutCompare makes g commit with a script that skips the compare:
// the negative control's mutant, committing decisions made on a cached
// state whatever the stored state has become.
func WithoutCompare(g *Gate) {
	src := strings.Replace(casSource, casCompare, "if false then", 1)
	if src == casSource {
		panic("redisgate: the compare line is not in the script")
	}
	g.script = redis.NewScript(src)
}

// ScriptSource is the compare-and-set script, for the test that reads it.
const ScriptSource = casSource

// CachedStates is the number of resources g holds a state for.
func CachedStates(g *Gate) int { return g.cache.len() }
