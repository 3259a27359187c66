package contract

import "time"

// Locks serialise what must not run twice at once: a Deployment stage's infrastructure (a
// resource constraint) and the key of a Queue step. Each key is one long-lived lock workflow
// (LockWorkflow) that holds one ticket at a time and queues the others in arrival order. The
// stages reach it through these activities: a request is an update, answered at once with the
// grant or the place in line, and a later grant comes back as a signal. This file is the
// contract both sides share.
const (
	// LockWorkflow is the lock workflow's type: one run per key, started by the first acquire.
	LockWorkflow = "gantry.Lock"
	// UpdateLockAcquire queues LockRequests ([]LockRequest, in order) and answers a LockNotice
	// for each: granted, or where it stands. SignalLockRelease hands back (or withdraws) the
	// ticket it names.
	UpdateLockAcquire = "acquire"
	SignalLockRelease = "release"
	// QueryLock answers the lock's state (LockState).
	QueryLock = "state"
	// SignalLockNotice is what a lock tells a waiting workflow (LockNotice).
	SignalLockNotice = "lock-notice"

	// LockAcquire sends a LockRequest to its lock, starting the lock workflow when it is not
	// running, and returns the lock's answer (LockNotice); LockRelease sends a LockTicket's
	// release.
	LockAcquire = "gantry.LockAcquire"
	LockRelease = "gantry.LockRelease"
	// LockNotify delivers a lock's notices ([]LockDelivery) and answers, for each, whether its
	// workflow has closed; LockOwnerClosed tells whether a ticket's owner has closed.
	LockNotify      = "gantry.LockNotify"
	LockOwnerClosed = "gantry.LockOwnerClosed"
)

// DefaultLockCheck is how often a lock makes sure its holder still runs: a holder terminated
// from outside (the Temporal UI, `temporal workflow terminate`) cannot release, so its lock
// releases within this long of its end.
const DefaultLockCheck = 10 * time.Second

// WorkflowRef names one workflow run ("" run: the latest).
type WorkflowRef struct {
	ID    string `json:"id"`
	RunID string `json:"runId,omitempty"`
}

// LockRequest asks a lock for a ticket.
type LockRequest struct {
	Lock string `json:"lock"` // the lock workflow's ID
	Key  string `json:"key"`  // what is locked, as people read it
	// Ticket identifies the request: a second request with the holder's ticket is granted at
	// once (a pipeline that queues on its own key again), one with a queued ticket is a repeat.
	Ticket    string `json:"ticket"`
	Execution string `json:"execution"` // the requesting execution, for people
	Node      string `json:"node"`      // its node path (stage or step), for people
	// Notify is the workflow the lock signals (SignalLockNotice); Owner the one whose end
	// releases the ticket when nothing released it (the stage, or for a pipeline-scoped Queue
	// step the pipeline).
	Notify WorkflowRef `json:"notify"`
	Owner  WorkflowRef `json:"owner"`
	// Check is how often the lock checks that its holder runs (0: DefaultLockCheck), set by the
	// worker that starts the lock.
	Check time.Duration `json:"check,omitempty"`
	// Capacity is how many tickets the lock grants at once (0 or 1: one), for a concurrency
	// limit; the latest request's capacity applies.
	Capacity int `json:"capacity,omitempty"`
}

// LockTicket names a ticket of a lock, to release it.
type LockTicket struct {
	Lock   string `json:"lock"`
	Ticket string `json:"ticket"`
}

// LockNotice tells a waiting workflow where its ticket stands.
type LockNotice struct {
	Lock    string `json:"lock"`
	Ticket  string `json:"ticket"`
	Granted bool   `json:"granted,omitempty"`
	// Holder is the execution (and node) holding the lock, Ahead how many tickets are queued
	// before this one (both when not granted).
	Holder string `json:"holder,omitempty"`
	Ahead  int    `json:"ahead,omitempty"`
}

// LockDelivery is one notice to one workflow.
type LockDelivery struct {
	To     WorkflowRef `json:"to"`
	Notice LockNotice  `json:"notice"`
}

// LockState is a lock workflow's state: its input when it starts or continues as new, and the
// answer to QueryLock.
type LockState struct {
	Key    string        `json:"key"`
	Holder *LockRequest  `json:"holder,omitempty"`
	Since  time.Time     `json:"since,omitempty"` // when the holder got it
	Queue  []LockRequest `json:"queue,omitempty"`
	// Capacity is how many tickets it grants at once (0 or 1: one); Others are the holders
	// besides Holder, in the order they were granted.
	Capacity int           `json:"capacity,omitempty"`
	Others   []LockRequest `json:"others,omitempty"`
	// Done are the tickets released lately, oldest first: a request repeated after its release
	// is not queued again.
	Done []string `json:"done,omitempty"`
	// Grants counts the tickets granted over the lock's life.
	Grants int64 `json:"grants,omitempty"`
}
