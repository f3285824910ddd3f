package sim

import "container/heap"

// event is one thing that happens at a simulated instant. Events with the
// same instant run in the order they were scheduled (seq), so a run is a
// pure function of its seed.
type event struct {
	atMs int64
	seq  uint64
	fn   func()
}

// eventQueue is a min-heap on (atMs, seq).
type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].atMs != q[j].atMs {
		return q[i].atMs < q[j].atMs
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = event{}
	*q = old[:len(old)-1]
	return e
}

func (q *eventQueue) push(e event) { heap.Push(q, e) }
func (q *eventQueue) pop() event   { return heap.Pop(q).(event) }
