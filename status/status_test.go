package status

import "testing"

func TestRollup(t *testing.T) {
	cases := []struct {
		name string
		in   []Status
		want Status
	}{
		{"empty is success", nil, Succeeded},
		{"all skipped", []Status{Skipped, Skipped}, Succeeded},
		{"ignored wins among positive", []Status{Succeeded, IgnoreFailed, Skipped}, IgnoreFailed},
		// C12
		{"C12 expired failed ignored", []Status{Expired, Failed, IgnoreFailed}, Failed},
		{"C12 expired succeeded", []Status{Expired, Succeeded}, Expired},
		{"C12 succeeded ignored", []Status{Succeeded, IgnoreFailed}, IgnoreFailed},
		{"C12 failed aborted", []Status{Failed, Aborted}, Aborted},
		{"errored before failed", []Status{Failed, Errored}, Errored},
		{"freeze before rejected", []Status{ApprovalRejected, FreezeFailed}, FreezeFailed},
		{"rejected before expired", []Status{Expired, ApprovalRejected}, ApprovalRejected},
		{"waiting orders", []Status{Running, ApprovalWaiting, InterventionWaiting}, InterventionWaiting},
		{"input before resource", []Status{ResourceWaiting, InputWaiting}, InputWaiting},
		{"wait step", []Status{Succeeded, WaitStepRunning, Running}, WaitStepRunning},
		{"queued", []Status{Running, Queued}, Queued},
		{"flowing is running", []Status{Succeeded, AsyncWaiting}, Running},
		{"paused", []Status{Succeeded, Paused}, Paused},
		{"unknown combination", []Status{NotStarted}, Errored},
	}
	for _, c := range cases {
		if got := Rollup(c.in); got != c.want {
			t.Errorf("%s: Rollup(%v) = %s, want %s", c.name, c.in, got, c.want)
		}
	}
}

func TestSets(t *testing.T) {
	if !Aborted.Final() || Aborted.Broke() || Aborted.Positive() {
		t.Error("ABORTED is final, neither broke nor positive")
	}
	if Succeeded.APIName() != "Success" || FreezeFailed.APIName() != "AbortedByFreeze" {
		t.Error("API names")
	}
}
