package outbox

// Crash drops o as a SIGKILL would: its files are closed and its lock
// released, with nothing synced and no ack written.
func (o *Outbox) Crash() {
	o.mu.Lock()
	o.closed = true
	close(o.done)
	for _, q := range o.queues {
		q.syncMu.Lock()
		q.mu.Lock()
		q.closed = true
		q.closeFiles()
		q.mu.Unlock()
		q.syncMu.Unlock()
	}
	o.mu.Unlock()
	o.lock.Close()
}
