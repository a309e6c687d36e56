package config

import (
	"slices"
	"strings"
)

// clientEnvNames are the NARAD_* variables of the narad CLI's client
// commands (docs/api.md#cli): not settings of the server, but not typos
// either when they are set where it starts.
var clientEnvNames = []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONFIG_DIR"}

// UnknownEnv is a NARAD_* variable of the environment that no setting
// reads, with the setting's variable it most likely meant ("" when none
// is close).
type UnknownEnv struct {
	Name, Suggestion string
}

// UnknownEnvNames lists, sorted by name, the NARAD_* variables of environ
// ("NAME=value" entries, as os.Environ gives them) that neither a
// setting nor the CLI reads: ApplyEnv looks up only the names it knows,
// so a mistyped one (NARAD_STORAGE_DATA_DIR for NARAD_DATA_DIR) changed
// nothing and said nothing.
func UnknownEnvNames(environ []string) []UnknownEnv {
	known := append(EnvNames(), clientEnvNames...)
	var unknown []UnknownEnv
	for _, entry := range environ {
		name, _, _ := strings.Cut(entry, "=")
		if !strings.HasPrefix(name, "NARAD_") || slices.Contains(known, name) {
			continue
		}
		unknown = append(unknown, UnknownEnv{Name: name, Suggestion: closestName(name, EnvNames())})
	}
	slices.SortFunc(unknown, func(a, b UnknownEnv) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(unknown, func(a, b UnknownEnv) bool { return a.Name == b.Name })
}

// closestName is the candidate that is name with one word more
// (NARAD_STORAGE_DATA_DIR, after the key storage.data_dir, for
// NARAD_DATA_DIR), else the nearest by edit distance if within a third of
// name's length (a typo), else "".
func closestName(name string, candidates []string) string {
	best, bestDistance := "", len(name)/3+1
	for _, candidate := range candidates {
		if oneWordMore(name, candidate) {
			return candidate
		}
		if d := editDistance(name, candidate); d < bestDistance {
			best, bestDistance = candidate, d
		}
	}
	return best
}

// oneWordMore reports whether name is candidate with one more
// underscore-separated word.
func oneWordMore(name, candidate string) bool {
	words := strings.Split(name, "_")
	for i := 1; i < len(words); i++ {
		if strings.Join(slices.Concat(words[:i], words[i+1:]), "_") == candidate {
			return true
		}
	}
	return false
}

// editDistance is the Levenshtein distance of two ASCII strings.
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current := make([]int, len(b)+1)
		current[0] = i
		for j := 1; j <= len(b); j++ {
			substitution := previous[j-1]
			if a[i-1] != b[j-1] {
				substitution++
			}
			current[j] = min(previous[j]+1, current[j-1]+1, substitution)
		}
		previous = current
	}
	return previous[len(b)]
}
