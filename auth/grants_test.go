package auth

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"narad/meta"
)

// universe lists every topic name of up to four letters over {a, b, c}.
// Patterns use only a and b (and a final *), so when held patterns fail
// to cover an asked one there is a witness among these names: the asked
// prefix (at most three letters) followed by c, which no held pattern
// names and only a held prefix wildcard of the asked prefix matches.
// Without the third letter, {a*, b*} would seem to cover * (seen by
// rapid).
func universe() []string {
	names := []string{""}
	for length := 1; length <= 4; length++ {
		for _, name := range names {
			if len(name) == length-1 {
				names = append(names, name+"a", name+"b", name+"c")
			}
		}
	}
	return names[1:]
}

func drawPattern(t *rapid.T, label string) string {
	return rapid.StringMatching(`[ab]{0,3}\*?`).Filter(func(p string) bool { return p != "" }).Draw(t, label)
}

// naiveMatches is the model of Matches: a pattern is a set of names.
func naiveMatches(pattern, name string) bool {
	if strings.HasSuffix(pattern, "*") {
		prefix := pattern[:len(pattern)-1]
		return len(name) >= len(prefix) && name[:len(prefix)] == prefix
	}
	return pattern == name
}

// naiveCovers: held covers asked when every name a pattern asked for
// matches is matched by a held pattern of the same action.
func naiveCovers(held, asked []meta.Grant) bool {
	for _, g := range held {
		if g.Action == ActionAdmin {
			return true
		}
	}
	for _, g := range asked {
		if g.Action == ActionAdmin {
			return false
		}
		for _, pattern := range g.Patterns {
			for _, name := range universe() {
				if naiveMatches(pattern, name) && !naiveAllowed(held, g.Action, name) {
					return false
				}
			}
		}
	}
	return true
}

func naiveAllowed(held []meta.Grant, action, name string) bool {
	for _, g := range held {
		for _, pattern := range g.Patterns {
			if g.Action == action && naiveMatches(pattern, name) {
				return true
			}
		}
	}
	return false
}

func drawGrants(t *rapid.T, label string) []meta.Grant {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) meta.Grant {
		action := rapid.SampledFrom([]string{ActionProduce, ActionConsume, ActionAdmin}).Draw(t, "action")
		if action == ActionAdmin {
			return meta.Grant{Action: action}
		}
		return meta.Grant{Action: action, Patterns: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string { return drawPattern(t, "pattern") }), 1, 3).Draw(t, "patterns")}
	}), 0, 3).Draw(t, label)
}

// Property: meta.PatternMatches (which Identity.Allowed uses),
// Identity.Allowed and Covers agree with the naive
// set model on patterns over a small alphabet.
func TestGrantsMatchNaiveModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pattern, name := drawPattern(t, "pattern"), rapid.SampledFrom(universe()).Draw(t, "name")
		require.Equal(t, naiveMatches(pattern, name), meta.PatternMatches(pattern, name))
		held, asked := drawGrants(t, "held"), drawGrants(t, "asked")
		require.Equal(t, naiveCovers(held, asked), Covers(held, asked), "held %v asked %v", held, asked)
		action := rapid.SampledFrom([]string{ActionProduce, ActionConsume}).Draw(t, "allowed action")
		id := Identity{Username: "u", Grants: held}
		require.Equal(t, naiveAllowed(held, action, name) || id.Admin(), id.Allowed(action, name))
		require.True(t, Covers(held, held), "a grant list covers itself")
	})
}

func TestValidGrants(t *testing.T) {
	good := [][]meta.Grant{
		nil,
		{{Action: ActionAdmin}},
		{{Action: ActionProduce, Patterns: []string{"orders", "logs.*", "*"}}, {Action: ActionCreate, Patterns: []string{"x"}}},
		{{Action: ActionProduce, Patterns: []string{".*", "..*", "...", ".a", strings.Repeat("a", 255), strings.Repeat("a", 254) + "*"}}},
		{{Action: ActionProduce, Patterns: []string{"a"}}, {Action: ActionConsume, Patterns: []string{"a"}}},
		{{Action: ActionProduce, Patterns: []string{"a"}}, {Action: ActionProduce, Patterns: []string{"b"}}},
	}
	for _, grants := range good {
		require.NoError(t, ValidGrants(grants), "%v", grants)
	}
	bad := [][]meta.Grant{
		{{Action: "delete", Patterns: []string{"a"}}},
		{{Action: ActionAdmin, Patterns: []string{"a"}}},
		{{Action: ActionConsume}},
		{{Action: ActionConsume, Patterns: []string{""}}},
		{{Action: ActionConsume, Patterns: []string{"a*b"}}},
		{{Action: ActionConsume, Patterns: []string{"a b"}}},
		{{Action: ActionConsume, Patterns: []string{strings.Repeat("a", 256)}}},
		tooManyGrants(),
	}
	for _, grants := range bad {
		require.Error(t, ValidGrants(grants), "%v", grants)
	}
	require.NoError(t, ValidUsername("ann.b-1_x"))
	require.NoError(t, ValidUsername("..."), "only . and .. are path segments")
	for _, name := range []string{"", "a b", strings.Repeat("u", 65), "é", ".", ".."} {
		require.Error(t, ValidUsername(name), "%q", name)
	}
}

func tooManyGrants() []meta.Grant {
	grants := make([]meta.Grant, 65)
	for i := range grants {
		grants[i] = meta.Grant{Action: ActionProduce, Patterns: []string{fmt.Sprint("t", i)}}
	}
	return grants
}

// External audit finding: the API took patterns that match no topic name
// (".", ".."), kept a pattern given twice, and took a 255-byte prefix with
// its '*' (256 bytes) that the metastore then refused with its internal
// error. ValidGrants now applies the metastore's rule (meta.CheckGrants),
// and refuses each with a message that says what is wrong.
func TestValidGrantsRefusesWhatTheMetastoreRefusesAndWhatMatchesNothing(t *testing.T) {
	for _, tc := range []struct {
		grants []meta.Grant
		want   string
	}{
		{[]meta.Grant{{Action: ActionProduce, Patterns: []string{"."}}}, `invalid pattern "."`},
		{[]meta.Grant{{Action: ActionProduce, Patterns: []string{".."}}}, `invalid pattern ".."`},
		{[]meta.Grant{{Action: ActionProduce, Patterns: []string{strings.Repeat("a", 255) + "*"}}}, "up to 254 of them"},
		{[]meta.Grant{{Action: ActionProduce, Patterns: []string{"a", "a"}}}, `grant produce gives pattern "a" twice`},
		{[]meta.Grant{{Action: ActionProduce, Patterns: []string{"a"}}, {Action: ActionProduce, Patterns: []string{"b", "a"}}},
			`grant produce gives pattern "a" twice`},
		{[]meta.Grant{{Action: ActionAdmin}, {Action: ActionAdmin}}, "grant admin is given twice"},
	} {
		err := ValidGrants(tc.grants)
		require.ErrorContains(t, err, tc.want, "%v", tc.grants)
		require.NotContains(t, err.Error(), "meta:", "the metastore's prefix is not the API's")
	}
}
