package workflows

// SetLockHistory sets the history length past which lock workflows continue as new, and
// returns what restores it.
func SetLockHistory(n int) (restore func()) {
	old := lockHistory
	lockHistory = n
	return func() { lockHistory = old }
}
