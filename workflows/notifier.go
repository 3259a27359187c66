package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// NotifierName is the workflow that delivers an execution's notifications (spec 20.5): the
// pipeline starts it at the first event a rule selects, as a child that outlives it, and hands
// it every delivery in emission order. It retries each delivery on the schedule of
// NotifySettings, keeps deliveries to one target in order, records every outcome, and ends once
// the pipeline has closed and nothing is left to send.
const NotifierName = "gantry.Notifier"

// QueryNotifications returns a notifier's delivery records ([]DeliveryRecord).
const QueryNotifications = "notifications"

// SignalNotify carries deliveries (NotifyBatch): from stages to their pipeline, and from the
// pipeline to its notifier.
const SignalNotify = "notify"

// NotifierID is the workflow ID of an execution's notifier.
func NotifierID(executionID string) string { return executionID + "/notifications" }

// Delivery statuses (spec 20.5.8).
const (
	DeliveryPending   = "PENDING"
	DeliveryDelivered = "DELIVERED"
	DeliveryFailed    = "FAILED"
)

// NotifySettings is the delivery retry schedule; zero fields take DefaultNotifySettings'.
type NotifySettings struct {
	FirstRetry     time.Duration `json:"firstRetry,omitempty"`
	MaxInterval    time.Duration `json:"maxInterval,omitempty"`
	MaxAttempts    int           `json:"maxAttempts,omitempty"`
	MaxElapsed     time.Duration `json:"maxElapsed,omitempty"`
	AttemptTimeout time.Duration `json:"attemptTimeout,omitempty"`
}

// DefaultNotifySettings is spec 20.5.4's schedule: first retry after 5 s, doubling up to 5 min,
// at most 8 attempts within 30 min, each attempt at most 30 s.
var DefaultNotifySettings = NotifySettings{FirstRetry: 5 * time.Second, MaxInterval: 5 * time.Minute, MaxAttempts: 8,
	MaxElapsed: 30 * time.Minute, AttemptTimeout: 30 * time.Second}

func (s NotifySettings) withDefaults() NotifySettings {
	d := DefaultNotifySettings
	if s.FirstRetry > 0 {
		d.FirstRetry = s.FirstRetry
	}
	if s.MaxInterval > 0 {
		d.MaxInterval = s.MaxInterval
	}
	if s.MaxAttempts > 0 {
		d.MaxAttempts = s.MaxAttempts
	}
	if s.MaxElapsed > 0 {
		d.MaxElapsed = s.MaxElapsed
	}
	if s.AttemptTimeout > 0 {
		d.AttemptTimeout = s.AttemptTimeout
	}
	return d
}

// NotifyBatch is deliveries in emission order; Final says the pipeline sends no more. Seq
// numbers a pipeline's batches from 1: it sends them without waiting for each to arrive, and
// the notifier takes them in order. Batches without Seq (stages to their pipeline, a failed
// trigger) are taken as they come.
type NotifyBatch struct {
	Seq        int                 `json:"seq,omitempty"`
	Deliveries []contract.Delivery `json:"deliveries,omitempty"`
	Final      bool                `json:"final,omitempty"`
}

// DeliveryRecord is one delivery's outcome so far; secrets are masked.
type DeliveryRecord struct {
	Key      string    `json:"key"`
	Event    string    `json:"event"`
	Node     string    `json:"node"`
	Rule     string    `json:"rule"`
	Target   string    `json:"target"` // channel and where, masked
	Status   string    `json:"status"`
	Attempts int       `json:"attempts"`
	Code     int       `json:"code,omitempty"` // last HTTP or SMTP status
	Error    string    `json:"error,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// NotifierInput starts a notifier, or continues one with nothing left to send (Records and
// Closed carried over).
type NotifierInput struct {
	ExecutionID string         `json:"executionId"`
	Settings    NotifySettings `json:"settings"`
	// Initial are the deliveries known when the pipeline started the notifier.
	Initial []contract.Delivery `json:"initial,omitempty"`
	// NextSeq is the Seq of the next batch to take (0: 1).
	NextSeq int              `json:"nextSeq,omitempty"`
	Records []DeliveryRecord `json:"records,omitempty"`
	Closed  bool             `json:"closed,omitempty"`
}

// NotifierResult is a notifier's final records.
type NotifierResult struct {
	Records []DeliveryRecord `json:"records"`
}

// A notifier learns that its pipeline is done from a Final batch, sent when the pipeline's last
// events have deliveries. Otherwise (and for a terminated pipeline) it asks whether the
// pipeline has closed whenever it has been idle for firstIdleCheck, doubling up to idleCheck.
const (
	firstIdleCheck = time.Second
	idleCheck      = time.Hour
)

type notifier struct {
	in      NotifierInput
	set     NotifySettings
	records []DeliveryRecord
	index   map[string]int                 // record index by delivery key
	queues  map[string][]contract.Delivery // per (rule, target), in emission order
	busy    map[string]bool                // queues whose sender runs
	closed  bool
	next    int                 // Seq of the next batch to take
	early   map[int]NotifyBatch // batches that arrived before an earlier one
}

// Notifier is the notifier workflow.
func Notifier(ctx workflow.Context, in NotifierInput) (*NotifierResult, error) {
	n := &notifier{in: in, set: in.Settings.withDefaults(), records: in.Records, index: map[string]int{},
		queues: map[string][]contract.Delivery{}, busy: map[string]bool{}, closed: in.Closed, next: max(in.NextSeq, 1), early: map[int]NotifyBatch{}}
	for i, r := range n.records {
		n.index[r.Key] = i
	}
	if err := workflow.SetQueryHandler(ctx, QueryNotifications, func() ([]DeliveryRecord, error) { return n.records, nil }); err != nil {
		return nil, err
	}
	ch := workflow.GetSignalChannel(ctx, SignalNotify)
	n.enqueue(ctx, in.Initial)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var b NotifyBatch
			if !ch.Receive(ctx, &b) {
				return
			}
			n.take(ctx, b)
		}
	})
	wait := firstIdleCheck
	for {
		ok, err := workflow.AwaitWithTimeout(ctx, wait, func() bool {
			return (n.closed && n.idle()) || (n.idle() && workflow.GetInfo(ctx).GetContinueAsNewSuggested())
		})
		if err != nil {
			return nil, err
		}
		if ok && n.closed {
			break
		}
		if ok { // a long history: go on in a fresh run once what arrived is taken
			n.takeArrived(ctx, ch)
			if n.idle() && len(n.early) == 0 {
				return nil, workflow.NewContinueAsNewError(ctx, NotifierName, NotifierInput{
					ExecutionID: in.ExecutionID, Settings: in.Settings, Records: n.records, Closed: n.closed, NextSeq: n.next})
			}
			continue
		}
		if n.idle() && n.pipelineClosed(ctx) {
			// The pipeline's last batch can arrive while the notifier asks (the pipeline closes
			// right after sending it): what arrived is sent before the notifier ends. Only a
			// history that recorded this end can take the other branch, and such a notifier has
			// completed, so no running execution replays differently.
			n.takeArrived(ctx, ch)
			if n.idle() && len(n.early) == 0 {
				break
			}
			n.closed = true
		}
		wait = min(wait*2, idleCheck)
	}
	return &NotifierResult{Records: n.records}, nil
}

// takeArrived takes the batches that have arrived and not been taken yet.
func (n *notifier) takeArrived(ctx workflow.Context, ch workflow.ReceiveChannel) {
	for {
		var b NotifyBatch
		if !ch.ReceiveAsync(&b) {
			return
		}
		n.take(ctx, b)
	}
}

func (n *notifier) take(ctx workflow.Context, b NotifyBatch) {
	if b.Seq == 0 {
		n.takeNow(ctx, b)
		return
	}
	n.early[b.Seq] = b
	for {
		next, ok := n.early[n.next]
		if !ok {
			return
		}
		delete(n.early, n.next)
		n.next++
		n.takeNow(ctx, next)
	}
}

func (n *notifier) takeNow(ctx workflow.Context, b NotifyBatch) {
	n.enqueue(ctx, b.Deliveries)
	if b.Final {
		n.closed = true
	}
}

// enqueue records new deliveries and starts a sender for each target that has none. A key
// already recorded is a duplicate of an event the engine saw twice: it is sent once.
func (n *notifier) enqueue(ctx workflow.Context, ds []contract.Delivery) {
	now := workflow.Now(ctx)
	for _, d := range ds {
		if _, seen := n.index[d.Key]; seen {
			continue
		}
		n.index[d.Key] = len(n.records)
		n.records = append(n.records, DeliveryRecord{Key: d.Key, Event: d.Event.Type, Node: d.Event.Node, Rule: d.Rule,
			Target: d.Describe(), Status: DeliveryPending, Created: now, Updated: now})
		q := fmt.Sprintf("%s/%d", d.Rule, d.Target)
		n.queues[q] = append(n.queues[q], d)
		if !n.busy[q] {
			n.busy[q] = true
			workflow.Go(ctx, func(ctx workflow.Context) { n.drain(ctx, q) })
		}
	}
}

func (n *notifier) idle() bool {
	for _, b := range n.busy {
		if b {
			return false
		}
	}
	return true
}

// drain sends a target's deliveries one after the other: a later event waits until the
// earlier one is delivered or failed (spec 20.5.6).
func (n *notifier) drain(ctx workflow.Context, q string) {
	for len(n.queues[q]) > 0 {
		d := n.queues[q][0]
		n.deliver(ctx, d)
		n.queues[q] = n.queues[q][1:]
	}
	delete(n.queues, q)
	n.busy[q] = false
}

// deliver runs attempts until one succeeds, one fails for good, or the schedule is spent.
func (n *notifier) deliver(ctx workflow.Context, d contract.Delivery) {
	rec := func() *DeliveryRecord { return &n.records[n.index[d.Key]] }
	if d.Unresolved != "" {
		r := rec()
		r.Status, r.Error, r.Updated = DeliveryFailed, d.Unresolved, workflow.Now(ctx)
		return
	}
	queue := workflow.GetInfo(ctx).TaskQueueName
	if len(d.Selectors) > 0 {
		queue = SelectorQueue(queue, d.Selectors)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: n.set.AttemptTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             "notify " + d.Event.Type + " → " + d.Describe(),
	})
	first := workflow.Now(ctx)
	interval := n.set.FirstRetry
	for attempt := rec().Attempts + 1; ; attempt++ {
		var res contract.DeliveryResult
		err := workflow.ExecuteActivity(actx, contract.Notify, d).Get(ctx, &res)
		r := rec()
		r.Attempts, r.Updated = attempt, workflow.Now(ctx)
		if err == nil {
			r.Status, r.Code, r.Detail, r.Error = DeliveryDelivered, res.Code, res.Detail, ""
			return
		}
		fail, msg := attemptFailure(err, n.set.AttemptTimeout)
		r.Code, r.Error = fail.Code, msg
		if !fail.Retryable || attempt >= n.set.MaxAttempts {
			r.Status = DeliveryFailed
			return
		}
		wait := interval
		if fail.RetryAfter > 0 {
			wait = fail.RetryAfter
		}
		if workflow.Now(ctx).Add(wait).Sub(first) > n.set.MaxElapsed {
			r.Status = DeliveryFailed
			r.Error = fmt.Sprintf("%s (gave up: the next attempt would start more than %s after the first)", msg, n.set.MaxElapsed)
			return
		}
		if workflow.Sleep(ctx, wait) != nil {
			return
		}
		interval = min(interval*2, n.set.MaxInterval)
	}
}

// attemptFailure reads a failed attempt: the activity's own verdict, or a lost attempt (its
// worker died or it ran out of time), which is retried.
func attemptFailure(err error, timeout time.Duration) (contract.DeliveryFailure, string) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		var f contract.DeliveryFailure
		if app.HasDetails() && app.Details(&f) == nil {
			return f, app.Message()
		}
		return contract.DeliveryFailure{Retryable: true}, app.Message()
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		return contract.DeliveryFailure{Retryable: true}, fmt.Sprintf("the attempt did not finish within %s (its worker may have stopped)", timeout)
	}
	return contract.DeliveryFailure{Retryable: true}, err.Error()
}

// pipelineClosed asks whether the execution has closed; an answer that cannot be had counts as
// still running.
func (n *notifier) pipelineClosed(ctx workflow.Context) bool {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}})
	var closed bool
	if err := workflow.ExecuteActivity(actx, contract.ExecutionClosed, n.in.ExecutionID).Get(ctx, &closed); err != nil {
		return false
	}
	return closed
}
