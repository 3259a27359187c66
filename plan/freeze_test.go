package plan

import (
	"testing"
	"time"
)

func at(t *testing.T, zone, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseFreezeTime(s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A window holds from its start for its duration, once or at each repetition until its end,
// on the calendar of its zone (a daily window keeps its local hour across daylight saving).
func TestFreezeWindowAt(t *testing.T) {
	berlin := "Europe/Berlin"
	cases := []struct {
		name string
		w    FreezeWindow
		t    time.Time
		want bool
	}{
		{"once, inside", FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-11-20 06:00 PM"), Duration: 2 * time.Hour}, at(t, "UTC", "2026-11-20 19:59"), true},
		{"once, at its end", FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-11-20 06:00 PM"), Duration: 2 * time.Hour}, at(t, "UTC", "2026-11-20 20:00"), false},
		{"once, before", FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-11-20 06:00 PM"), Duration: 2 * time.Hour}, at(t, "UTC", "2026-11-20 17:59"), false},
		{"daily, a later day", FreezeWindow{Zone: berlin, Start: at(t, berlin, "2026-03-01 22:00"), Duration: 4 * time.Hour, Recurrence: "Daily"}, at(t, berlin, "2026-11-28 23:30"), true},
		{"daily, past midnight", FreezeWindow{Zone: berlin, Start: at(t, berlin, "2026-03-01 22:00"), Duration: 4 * time.Hour, Recurrence: "Daily"}, at(t, berlin, "2026-11-29 01:30"), true},
		{"daily, local hour after DST", FreezeWindow{Zone: berlin, Start: at(t, berlin, "2026-03-01 22:00"), Duration: time.Hour, Recurrence: "Daily"}, at(t, berlin, "2026-07-01 22:30"), true},
		{"daily, outside", FreezeWindow{Zone: berlin, Start: at(t, berlin, "2026-03-01 22:00"), Duration: 4 * time.Hour, Recurrence: "Daily"}, at(t, berlin, "2026-11-28 12:00"), false},
		{"daily, after until", FreezeWindow{Zone: berlin, Start: at(t, berlin, "2026-03-01 22:00"), Duration: 4 * time.Hour, Recurrence: "Daily", Until: at(t, berlin, "2026-03-10 00:00")}, at(t, berlin, "2026-03-12 23:00"), false},
		{"weekly, same weekday", FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-11-06 18:00"), Duration: 60 * time.Hour, Recurrence: "Weekly"}, at(t, "UTC", "2026-11-29 10:00"), true},
		{"weekly, other day", FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-11-06 18:00"), Duration: 60 * time.Hour, Recurrence: "Weekly"}, at(t, "UTC", "2026-11-25 10:00"), false},
		{"every 3 months", FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-01-15 00:00"), Duration: 24 * time.Hour, Recurrence: "Monthly", Every: 3}, at(t, "UTC", "2026-10-15 12:00"), true},
		{"every 3 months, skipped month", FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-01-15 00:00"), Duration: 24 * time.Hour, Recurrence: "Monthly", Every: 3}, at(t, "UTC", "2026-11-15 12:00"), false},
		{"yearly", FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2020-12-24 00:00"), Duration: 72 * time.Hour, Recurrence: "Yearly"}, at(t, "UTC", "2026-12-25 12:00"), true},
	}
	for _, c := range cases {
		if _, _, got := c.w.At(c.t); got != c.want {
			t.Errorf("%s: At(%s) = %v, want %v", c.name, c.t, got, c.want)
		}
	}
}

// Next finds the first repetition that starts after a time.
func TestFreezeWindowNext(t *testing.T) {
	w := FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-11-06 18:00"), Duration: time.Hour, Recurrence: "Weekly"}
	from, _, ok := w.Next(at(t, "UTC", "2026-11-28 12:00"))
	if want := at(t, "UTC", "2026-12-04 18:00"); !ok || !from.Equal(want) {
		t.Errorf("Next = %s %v, want %s", from, ok, want)
	}
	once := FreezeWindow{Zone: "UTC", Start: at(t, "UTC", "2026-11-06 18:00"), Duration: time.Hour}
	if _, _, ok := once.Next(at(t, "UTC", "2026-11-28 12:00")); ok {
		t.Error("a window that does not repeat and has passed has a next repetition")
	}
}
