package client

// WatchdogEvents reports what m's watchdog does ("armed", "renewed",
// "retry", "lost"), so tests step a fake clock in lockstep with it instead
// of sleeping. Call it before the first grant.
func WatchdogEvents(m *Mutex) <-chan string {
	ch := make(chan string, 256)
	m.hook = func(e string) { ch <- e }
	return ch
}

// HoldEvents is WatchdogEvents for the permits, multi-locks and elections
// of c. Call it before the first grant.
func HoldEvents(c *Client) <-chan string {
	ch := make(chan string, 256)
	c.hook = func(e string) { ch <- e }
	return ch
}
