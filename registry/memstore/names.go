package memstore

import (
	"slices"
	"strings"
)

// namesBlockMax bounds one block of names, 512: an insert moves at most
// a block of names and, on a split, the list of blocks (a 256th of the
// names at most).
const namesBlockMax = 512

// names is the resources with a record, in byte order, in blocks of at
// most namesBlockMax (a one-level B-tree): a page finds where it starts
// by binary search and then reads only what it lists, so it costs its
// limit and a search, not the number of records (issue 49; the store
// used to sort every name for every page). Records are never deleted
// but by a Restore, which rebuilds the list.
type names struct {
	blocks [][]string // each sorted and non-empty; every name of one below every name of the next
}

// namesOf is the list of ns, which need not be sorted.
func namesOf(ns []string) names {
	slices.Sort(ns)
	var out names
	for len(ns) > 0 {
		n := min(len(ns), namesBlockMax/2)
		out.blocks = append(out.blocks, slices.Clone(ns[:n]))
		ns = ns[n:]
	}
	return out
}

// block is the index of the first block whose last name is at or above
// name (len(blocks) when none).
func (ns *names) block(name string) int {
	i, _ := slices.BinarySearchFunc(ns.blocks, name, func(b []string, name string) int { return strings.Compare(b[len(b)-1], name) })
	return i
}

// insert adds name, which the list must not hold.
func (ns *names) insert(name string) {
	if len(ns.blocks) == 0 {
		ns.blocks = [][]string{{name}}
		return
	}
	i := min(ns.block(name), len(ns.blocks)-1)
	b := ns.blocks[i]
	j, _ := slices.BinarySearch(b, name)
	b = slices.Insert(b, j, name)
	if len(b) <= namesBlockMax {
		ns.blocks[i] = b
		return
	}
	half := len(b) / 2
	ns.blocks[i] = slices.Clip(b[:half])
	ns.blocks = slices.Insert(ns.blocks, i+1, slices.Clone(b[half:]))
}

// scan calls visit with each name under prefix above after, in order,
// until visit returns false or the names under prefix end. It returns
// how many names it looked at.
func (ns *names) scan(prefix, after string, visit func(string) bool) int {
	from := max(prefix, after)
	looked := 0
	for i := ns.block(from); i < len(ns.blocks); i++ {
		b := ns.blocks[i]
		j, found := slices.BinarySearch(b, from)
		if found && from == after {
			j++
		}
		for ; j < len(b); j++ {
			looked++
			if !strings.HasPrefix(b[j], prefix) || !visit(b[j]) {
				return looked
			}
		}
		from = ""
	}
	return looked
}
