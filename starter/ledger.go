package starter

import "github.com/gantry-cd/gantry/ledger"

// Ledger reads the deployments ledger, kept in the internal namespace.
func (s *Starter) Ledger() ledger.View { return ledger.Reader{Client: s.internal()} }
