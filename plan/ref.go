package plan

import "strings"

// LocalRef is the identifier a reference names: the reference product scopes entities and user
// groups by project, organisation (`org.`) and account (`account.`); Gantry keeps them all in
// local files and finds them by identifier.
func LocalRef(ref string) string {
	for _, scope := range []string{"account.", "org."} {
		if rest, ok := strings.CutPrefix(ref, scope); ok {
			return rest
		}
	}
	return ref
}
