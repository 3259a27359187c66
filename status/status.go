// Package status holds the node statuses of spec section 3 and their roll-up.
package status

// Status is an engine status name (spec 3.1), for example SUCCEEDED.
type Status string

// The statuses Gantry's engine produces or reads. API names are in APIName.
const (
	NotStarted          Status = "NOT_STARTED" // never visited; API name NotStarted
	Queued              Status = "QUEUED"
	Running             Status = "RUNNING"
	AsyncWaiting        Status = "ASYNC_WAITING"
	TaskWaiting         Status = "TASK_WAITING"
	TimedWaiting        Status = "TIMED_WAITING"
	WaitStepRunning     Status = "WAIT_STEP_RUNNING"
	ApprovalWaiting     Status = "APPROVAL_WAITING"
	ResourceWaiting     Status = "RESOURCE_WAITING"
	InputWaiting        Status = "INPUT_WAITING"
	InterventionWaiting Status = "INTERVENTION_WAITING"
	Pausing             Status = "PAUSING"
	Paused              Status = "PAUSED"
	Discontinuing       Status = "DISCONTINUING"
	QueuedLicenseLimit  Status = "QUEUED_LICENSE_LIMIT_REACHED"
	QueuedConcurrency   Status = "QUEUED_EXECUTION_CONCURRENCY_REACHED"
	Succeeded           Status = "SUCCEEDED"
	Skipped             Status = "SKIPPED"
	IgnoreFailed        Status = "IGNORE_FAILED"
	Suspended           Status = "SUSPENDED"
	Failed              Status = "FAILED"
	Errored             Status = "ERRORED"
	Expired             Status = "EXPIRED"
	ApprovalRejected    Status = "APPROVAL_REJECTED"
	FreezeFailed        Status = "FREEZE_FAILED"
	Aborted             Status = "ABORTED"
)

var apiNames = map[Status]string{
	NotStarted: "NotStarted", Queued: "Queued", Running: "Running", AsyncWaiting: "AsyncWaiting",
	TaskWaiting: "TaskWaiting", TimedWaiting: "TimedWaiting", WaitStepRunning: "WaitStepRunning",
	ApprovalWaiting: "ApprovalWaiting", ResourceWaiting: "ResourceWaiting", InputWaiting: "InputWaiting",
	InterventionWaiting: "InterventionWaiting", Pausing: "Pausing", Paused: "Paused",
	Discontinuing: "Discontinuing", QueuedLicenseLimit: "QueuedLicenseLimitReached",
	QueuedConcurrency: "QueuedExecutionConcurrencyReached", Succeeded: "Success", Skipped: "Skipped",
	IgnoreFailed: "IgnoreFailed", Suspended: "Suspended", Failed: "Failed", Errored: "Errored",
	Expired: "Expired", ApprovalRejected: "ApprovalRejected", FreezeFailed: "AbortedByFreeze", Aborted: "Aborted",
}

// APIName returns the API spelling of s (Success, Failed, ...).
func (s Status) APIName() string {
	if n, ok := apiNames[s]; ok {
		return n
	}
	return string(s)
}

// Positive reports membership of the POSITIVE set.
func (s Status) Positive() bool {
	return s == Succeeded || s == Skipped || s == Suspended || s == IgnoreFailed
}

// Broke reports membership of the BROKE set.
func (s Status) Broke() bool {
	return s == Failed || s == Errored || s == Expired || s == ApprovalRejected || s == FreezeFailed
}

// Final reports whether s is terminal.
func (s Status) Final() bool { return s.Positive() || s.Broke() || s == Aborted }

// Flowing reports membership of the FLOWING set.
func (s Status) Flowing() bool {
	return s == Running || s == AsyncWaiting || s == TaskWaiting || s == TimedWaiting || s == Discontinuing
}

// Rollup computes a parent's status from its children's (spec 3.3), in the spec's exact order.
func Rollup(children []Status) Status {
	allPositive, anyIgnored := true, false
	has := map[Status]bool{}
	flowing := false
	for _, c := range children {
		if !c.Positive() {
			allPositive = false
		}
		if c == IgnoreFailed {
			anyIgnored = true
		}
		if c.Flowing() {
			flowing = true
		}
		has[c] = true
	}
	switch {
	case allPositive && anyIgnored:
		return IgnoreFailed
	case allPositive:
		return Succeeded
	}
	for _, s := range []Status{Aborted, Errored, Failed, FreezeFailed, ApprovalRejected, Expired,
		InterventionWaiting, ApprovalWaiting, InputWaiting, ResourceWaiting, WaitStepRunning,
		QueuedLicenseLimit, Queued} {
		if has[s] {
			return s
		}
	}
	if flowing {
		return Running
	}
	if has[Paused] {
		return Paused
	}
	return Errored
}
