package httpclient

// QueuedCalls is how many of c's calls wait for its next batch (0 without
// WithBatching).
func QueuedCalls(c *Client) int {
	if c.batch == nil {
		return 0
	}
	return c.batch.q.Queued()
}
