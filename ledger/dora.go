package ledger

import (
	"time"

	"github.com/gantry-cd/gantry/contract"
)

// DORA is the four keys over a window of whole days (UTC), from the days the targets keep:
//   - deployment frequency: successful deployments per day;
//   - lead time for changes: the mean time from a deployment's commit to its end, over the
//     successful deployments whose commit time the run knew;
//   - change failure rate: the deployments that failed or were rolled back, over those that
//     succeeded or failed (aborted ones, and those a freeze blocked, changed nothing);
//   - time to restore: the mean time from a target's first failed deployment to the next
//     successful one, counted on the day of the success.
type DORA struct {
	From time.Time `json:"from"` // the first day
	To   time.Time `json:"to"`   // the day after the last
	Days int       `json:"days"`

	Deployments int `json:"deployments"` // succeeded + failed
	Succeeded   int `json:"succeeded"`
	Failed      int `json:"failed"` // rolled back ones included
	RolledBack  int `json:"rolledBack"`
	Aborted     int `json:"aborted"`

	FrequencyPerDay float64 `json:"deploymentFrequencyPerDay"`
	// ChangeFailureRate is a fraction (0.25: a quarter); nil without deployments.
	ChangeFailureRate *float64 `json:"changeFailureRate"`
	// LeadTimeSeconds and RestoreSeconds are means; nil without a sample.
	LeadTimeSeconds *float64 `json:"leadTimeSeconds"`
	LeadSamples     int      `json:"leadTimeSamples"`
	RestoreSeconds  *float64 `json:"timeToRestoreSeconds"`
	Restores        int      `json:"restores"`
	// Daily counts each day of a window of at most MaxDaily days, oldest first (the charts'
	// bars); a longer window has none.
	Daily []DORADay `json:"daily,omitempty"`
}

// DORADay is one day's deployments of the targets kept.
type DORADay struct {
	Day       string `json:"day"` // 2006-01-02
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
}

// MaxDaily is the longest window whose days DORA lists one by one.
const MaxDaily = 400

// ComputeDORA sums the targets' days from from's day up to to's day, excluded.
func ComputeDORA(states []contract.LedgerState, from, to time.Time) DORA {
	first, end := from.UTC().Format(time.DateOnly), to.UTC().Format(time.DateOnly)
	f, _ := time.Parse(time.DateOnly, first)
	e, _ := time.Parse(time.DateOnly, end)
	d := DORA{From: f, To: e, Days: int(e.Sub(f) / (24 * time.Hour))}
	if d.Days > 0 && d.Days <= MaxDaily {
		d.Daily = make([]DORADay, d.Days)
		for i := range d.Daily {
			d.Daily[i].Day = f.AddDate(0, 0, i).Format(time.DateOnly)
		}
	}
	var lead, restore int64
	for _, st := range states {
		for _, day := range st.Days {
			if day.Day < first || day.Day >= end {
				continue
			}
			d.Succeeded += day.Succeeded
			d.Failed += day.Failed
			if d.Daily != nil {
				if at, err := time.Parse(time.DateOnly, day.Day); err == nil {
					i := int(at.Sub(f) / (24 * time.Hour))
					d.Daily[i].Succeeded += day.Succeeded
					d.Daily[i].Failed += day.Failed
				}
			}
			d.RolledBack += day.RolledBack
			d.Aborted += day.Aborted
			lead += day.LeadSeconds
			d.LeadSamples += day.LeadCount
			restore += day.RestoreSeconds
			d.Restores += day.RestoreCount
		}
	}
	d.Deployments = d.Succeeded + d.Failed
	if d.Days > 0 {
		d.FrequencyPerDay = float64(d.Succeeded) / float64(d.Days)
	}
	if d.Deployments > 0 {
		d.ChangeFailureRate = ratio(int64(d.Failed), d.Deployments)
	}
	if d.LeadSamples > 0 {
		d.LeadTimeSeconds = ratio(lead, d.LeadSamples)
	}
	if d.Restores > 0 {
		d.RestoreSeconds = ratio(restore, d.Restores)
	}
	return d
}

func ratio(sum int64, n int) *float64 {
	v := float64(sum) / float64(n)
	return &v
}
