package locks

import (
	"context"
	"fmt"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/contract"
)

// Local holds locks within one process, for a worker without a Temporal client (the SDK's
// test environment runs workflows with no server). It grants a free key; a held one is an
// error, since waiting for it needs a lock workflow to hand it over.
type Local struct {
	mu   sync.Mutex
	held map[string]contract.LockRequest // by lock
}

// Acquire grants a free lock, or the holder's own ticket again.
func (l *Local) Acquire(_ context.Context, r contract.LockRequest) (contract.LockNotice, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[r.Lock]; ok && h.Ticket != r.Ticket {
		return contract.LockNotice{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s is held by %s (%s), and this worker has no Temporal server to queue with: run it with one", r.Key, h.Execution, h.Node),
			"LockHeld", nil)
	}
	if l.held == nil {
		l.held = map[string]contract.LockRequest{}
	}
	l.held[r.Lock] = r
	return contract.LockNotice{Lock: r.Lock, Ticket: r.Ticket, Granted: true}, nil
}

// Release hands a ticket back.
func (l *Local) Release(_ context.Context, tk contract.LockTicket) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[tk.Lock]; ok && h.Ticket == tk.Ticket {
		delete(l.held, tk.Lock)
	}
	return nil
}
