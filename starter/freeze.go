package starter

import (
	"context"

	"github.com/gantry-cd/gantry/activities/freezes"
	"github.com/gantry-cd/gantry/contract"
)

func (s *Starter) globalFreeze() *freezes.Global {
	return &freezes.Global{Client: s.internal(), TaskQueue: s.internalQueue()}
}

// GlobalFreeze reads the global deployment freeze.
func (s *Starter) GlobalFreeze(ctx context.Context) (contract.GlobalFreeze, error) {
	return s.globalFreeze().State(ctx)
}

// FreezeOn turns the global deployment freeze on: every Deployment stage that starts while it
// is on ends FREEZE_FAILED, unless its execution overrides freezes.
func (s *Starter) FreezeOn(ctx context.Context, by, reason string) (contract.GlobalFreeze, error) {
	return s.globalFreeze().On(ctx, by, reason)
}

// FreezeOff turns the global deployment freeze off; false when it was off.
func (s *Starter) FreezeOff(ctx context.Context, by string) (bool, error) {
	return s.globalFreeze().Off(ctx, by)
}
