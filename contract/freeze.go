package contract

import "time"

// The global deployment freeze (`gantry freeze on|off`) is one workflow in the internal
// namespace: running means on. Its memo says who turned it on, when and why; the signal
// SignalFreezeOff (the user's name) ends it.
const (
	FreezeWorkflow  = "gantry.GlobalFreeze"
	GlobalFreezeID  = "gantry-freeze/global"
	SignalFreezeOff = "off"
	// GlobalFreezeState answers a GlobalFreeze: a Deployment stage asks it before it deploys.
	GlobalFreezeState = "gantry.GlobalFreezeState"
)

// GlobalFreeze is the global freeze's state.
type GlobalFreeze struct {
	On     bool      `json:"on"`
	By     string    `json:"by,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	Reason string    `json:"reason,omitempty"`
}
