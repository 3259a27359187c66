package triggers

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Record is what happened to one delivery for one trigger (spec 13.6 statuses).
type Record struct {
	Time        time.Time `json:"time"`
	Provider    string    `json:"provider"`
	DeliveryID  string    `json:"deliveryId,omitempty"`
	Trigger     string    `json:"trigger,omitempty"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason,omitempty"`
	ExecutionID string    `json:"executionId,omitempty"`
	Duplicate   bool      `json:"duplicate,omitempty"`
	// Notifications is the workflow that tells the pipeline's TriggerFailed rules of a
	// failed start (its records: `gantry status` or the API take it as an execution ID).
	Notifications string `json:"notifications,omitempty"`
}

// EventLog appends records to a JSON-lines file (one per server data directory).
type EventLog struct {
	Path string
	mu   sync.Mutex
}

// Add appends a record.
func (l *EventLog) Add(r Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(l.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	b, _ := json.Marshal(r)
	_, err = f.Write(append(b, '\n'))
	return err
}

// Last returns the newest n records, newest first.
func (l *EventLog) Last(n int) ([]Record, error) {
	f, err := os.Open(l.Path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			all = append(all, r)
		}
	}
	out := make([]Record, 0, min(n, len(all)))
	for i := len(all) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, all[i])
	}
	return out, sc.Err()
}
