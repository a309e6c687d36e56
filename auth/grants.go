package auth

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"narad/meta"
	"narad/msg"
)

// The actions a grant may carry.
const (
	ActionProduce = meta.GrantProduce
	ActionConsume = "consume"       // ack, extend and nack included
	ActionCreate  = "create"        // the creator becomes the topic's owner
	ActionAdmin   = meta.GrantAdmin // global: carries no patterns
)

// patternsPerGrantMax bounds the patterns of a grant, as the metastore
// does (meta.CheckGrants).
const patternsPerGrantMax = 256

var usernamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidUsername checks a user name (docs/api.md#authentication).
func ValidUsername(name string) error {
	if !usernamePattern.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("invalid username %s: want 1-64 of [A-Za-z0-9._-], not . or .. (a path segment of the user's URL)", msg.QuoteClipped(name))
	}
	return nil
}

// ValidGrants checks a grant list: the actions it knows, admin without
// patterns, scoped actions with at least one pattern; then the rule of
// the metastore, the one it refuses a proposal with (meta.CheckGrants):
// the bounds, every pattern one that can match a topic name, no pattern
// given twice for an action.
func ValidGrants(grants []meta.Grant) error {
	for _, grant := range grants {
		if err := validGrant(grant); err != nil {
			return err
		}
	}
	return meta.CheckGrants(grants)
}

func validGrant(grant meta.Grant) error {
	switch grant.Action {
	case ActionAdmin:
		if len(grant.Patterns) > 0 {
			return fmt.Errorf("grant admin is global and takes no patterns")
		}
		return nil
	case ActionProduce, ActionConsume, ActionCreate:
	default:
		return fmt.Errorf("unknown grant action %s: want produce, consume, create or admin", msg.QuoteClipped(grant.Action))
	}
	if len(grant.Patterns) == 0 || len(grant.Patterns) > patternsPerGrantMax {
		return fmt.Errorf("grant %s needs 1 to %d patterns", grant.Action, patternsPerGrantMax)
	}
	for _, pattern := range grant.Patterns {
		// the metastore's check (meta.CheckGrantPattern) quotes a pattern
		// whole: one longer than any it accepts is refused here, in its
		// words, clipped
		if len(pattern) > msg.TopicNameBytesMax {
			return fmt.Errorf("invalid pattern %s: want a topic name (1 to %d of A-Z a-z 0-9 . _ -, not . or ..), "+
				"or a prefix of one (up to %d of them) ending in *", msg.QuoteClipped(pattern), msg.TopicNameBytesMax, msg.TopicNameBytesMax-1)
		}
	}
	return nil
}

// patternCovers reports whether every name outer matches, inner matches.
func patternCovers(outer, inner string) bool {
	outerPrefix, outerWildcard := strings.CutSuffix(outer, "*")
	if !outerWildcard {
		return outer == inner
	}
	innerPrefix, _ := strings.CutSuffix(inner, "*")
	return strings.HasPrefix(innerPrefix, outerPrefix)
}

// Covers reports whether the grants held allow at least everything the
// grants asked for allow: admin allows everything; otherwise each pattern
// of a scoped action needs a pattern of the same action that matches every
// name it matches, and admin is not covered.
func Covers(held, asked []meta.Grant) bool {
	if holdsAdmin(held) {
		return true
	}
	for _, grant := range asked {
		if grant.Action == ActionAdmin {
			return false
		}
		for _, pattern := range grant.Patterns {
			if !slices.ContainsFunc(held, func(h meta.Grant) bool {
				return h.Action == grant.Action && slices.ContainsFunc(h.Patterns, func(p string) bool { return patternCovers(p, pattern) })
			}) {
				return false
			}
		}
	}
	return true
}

func holdsAdmin(grants []meta.Grant) bool {
	return slices.ContainsFunc(grants, func(g meta.Grant) bool { return g.Action == ActionAdmin })
}

// Identity is an authenticated caller. The zero Identity is nobody.
type Identity struct {
	Username string
	// Root is the root administrator.
	Root bool
	// Grants are the user's grants in the view it was verified against.
	Grants []meta.Grant
	// CreatedAtMs is the user's creation time in that view: it tells the
	// user from a namesake created after a delete (what the caller creates
	// is guarded by it).
	CreatedAtMs int64
	// passwordHash is the hash the credential was verified against (nil
	// for an Identity not made by Verify): a password changed since makes
	// the credential stale (Authenticator.Current).
	passwordHash []byte
}

// Admin reports whether the caller is root or holds the admin grant.
func (id Identity) Admin() bool { return id.Root || holdsAdmin(id.Grants) }

// Allowed reports whether the caller may do action on the topic: an
// admin may do anything; others need a grant of the action whose pattern
// matches.
func (id Identity) Allowed(action, topic string) bool {
	return id.Root || meta.GrantsAllow(id.Grants, action, topic)
}
