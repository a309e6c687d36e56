package meta

import (
	"errors"
	"fmt"
	"strings"
)

// invalidf builds an ErrInvalidCommand rejection.
func invalidf(format string, args ...any) error {
	return rejectf(ErrInvalidCommand, format, args...)
}

// checkName checks a required name of at most bytesMax bytes.
func checkName(kind, name string, bytesMax int) error {
	if name == "" || len(name) > bytesMax {
		return invalidf("%s %q must have 1 to %d bytes", kind, name, bytesMax)
	}
	return nil
}

// checkOptionalName checks a name that may be empty, of at most bytesMax
// bytes.
func checkOptionalName(kind, name string, bytesMax int) error {
	if len(name) > bytesMax {
		return invalidf("%s %q has more than %d bytes", kind, name, bytesMax)
	}
	return nil
}

// checkNonNegative checks limits and timestamps that may not be negative.
func checkNonNegative(kind string, value int64) error {
	if value < 0 {
		return invalidf("%s %d is negative", kind, value)
	}
	return nil
}

// checkOwners checks a list of partition owners.
func checkOwners(owners []string) error {
	for partition, owner := range owners {
		if err := checkName("owner of partition", owner, nameBytesMax); err != nil {
			return rejectf(err, "partition %d", partition)
		}
	}
	return nil
}

// checkPartition checks a partition index on its own.
func checkPartition(partition int) error {
	if partition < 0 || partition >= PartitionsMax {
		return invalidf("partition %d is outside [0, %d)", partition, PartitionsMax)
	}
	return nil
}

// checkGrantBounds checks a grant list against the byte and count bounds
// every entry was held to, the only check when a command applies: entries
// written before CheckGrants existed may hold patterns it refuses (".",
// a name given twice), and must apply as they did. Propose checks
// CheckGrants as well (checkProposedGrants).
func checkGrantBounds(grants []Grant) error {
	if len(grants) > grantsPerUserMax {
		return invalidf("%d grants, at most %d", len(grants), grantsPerUserMax)
	}
	for _, grant := range grants {
		if err := checkName("grant action", grant.Action, nameBytesMax); err != nil {
			return err
		}
		if len(grant.Patterns) > patternsPerGrantMax {
			return invalidf("grant %s has %d patterns, at most %d", grant.Action, len(grant.Patterns), patternsPerGrantMax)
		}
		for _, pattern := range grant.Patterns {
			if len(pattern) > nameBytesMax {
				return invalidf("grant pattern %q is over %d bytes", pattern, nameBytesMax)
			}
		}
	}
	return nil
}

// CheckGrants is the rule of a grant list's shape (docs/api.md
// #authentication), the one the HTTP API answers 400 with (auth.ValidGrants,
// which adds the actions it knows) and Propose refuses a user change
// with: at most 64 grants of at most 256 patterns each; every pattern one
// that can match a topic name (CheckGrantPattern); no action given twice
// the same pattern (in one grant or two). Its errors are plain, without
// ErrInvalidCommand, for the API to quote.
func CheckGrants(grants []Grant) error {
	if len(grants) > grantsPerUserMax {
		return fmt.Errorf("%d grants, at most %d", len(grants), grantsPerUserMax)
	}
	type actionPattern struct{ action, pattern string }
	seen := map[actionPattern]bool{}
	for _, grant := range grants {
		if len(grant.Patterns) > patternsPerGrantMax {
			return fmt.Errorf("grant %s has %d patterns, at most %d", grant.Action, len(grant.Patterns), patternsPerGrantMax)
		}
		if len(grant.Patterns) == 0 {
			// an action given twice without patterns (admin) is a duplicate too
			if seen[actionPattern{grant.Action, ""}] {
				return fmt.Errorf("grant %s is given twice", grant.Action)
			}
			seen[actionPattern{grant.Action, ""}] = true
		}
		for _, pattern := range grant.Patterns {
			if err := CheckGrantPattern(pattern); err != nil {
				return err
			}
			if seen[actionPattern{grant.Action, pattern}] {
				return fmt.Errorf("grant %s gives pattern %q twice", grant.Action, pattern)
			}
			seen[actionPattern{grant.Action, pattern}] = true
		}
	}
	return nil
}

// CheckGrantPattern accepts a pattern that matches at least one topic
// name: a topic name itself (1 to 255 of [A-Za-z0-9._-], not "." or ".."),
// or a prefix of one, 0 to 254 of those characters, followed by '*' ("*"
// alone matches every name). A prefix of 255 would match only itself, a
// name: give the name. Any other pattern could never match a topic.
func CheckGrantPattern(pattern string) error {
	prefix, wildcard := strings.CutSuffix(pattern, "*")
	valid := len(pattern) <= nameBytesMax && (wildcard || (pattern != "" && pattern != "." && pattern != ".."))
	for i := 0; valid && i < len(prefix); i++ {
		valid = grantPatternByte(prefix[i])
	}
	if !valid {
		return fmt.Errorf("invalid pattern %q: want a topic name (1 to %d of A-Z a-z 0-9 . _ -, not . or ..), "+
			"or a prefix of one (up to %d of them) ending in *", pattern, nameBytesMax, nameBytesMax-1)
	}
	return nil
}

func grantPatternByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// checkProposedGrants is Propose's check of the grants a user change
// carries (CheckGrants), on top of Validate's.
func checkProposedGrants(cmd Command) error {
	var grants []Grant
	switch c := cmd.(type) {
	case PutUser:
		grants = c.Grants
	case SetGrants:
		grants = c.Grants
	default:
		return nil
	}
	if err := CheckGrants(grants); err != nil {
		return invalidf("%v", err)
	}
	return nil
}

// Validate implements Command.
func (c CreateTopic) Validate() error {
	if len(c.Owners) < 1 || len(c.Owners) > PartitionsMax {
		return invalidf("topic %q: %d partitions, want 1 to %d", c.Name, len(c.Owners), PartitionsMax)
	}
	return errors.Join(checkName("topic name", c.Name, nameBytesMax),
		checkNonNegative("retention_ms", c.RetentionMs),
		checkNonNegative("visibility_timeout_ms", c.VisibilityTimeoutMs),
		checkLeaseCap("max_in_flight_per_partition", c.MaxInFlightPerPartition),
		checkLeaseCap("max_acked_ahead_per_partition", c.MaxAckedAheadPerPartition),
		checkNonNegative("created_at_ms", c.CreatedAtMs),
		checkOwners(c.Owners), checkOptionalSchema(c.Schema),
		checkDeadLetters(c.Name, c.MaxDeliveries, c.DeadLetterTopic), checkOptionalParent(c.Parent, c.FanoutDelayMs),
		checkExpectedOwner(c.ExpectedOwner))
}

// checkLeaseCap checks a partition's lease cap: 1 to LeaseCapMax. The
// node resolves a 0 (its default) and bounds both before proposing, and
// a lease table takes nothing else (it stops on an assert), so a value
// out of that range, from a proposer that did neither, stops here.
func checkLeaseCap(kind string, value int) error {
	if value < 1 || value > LeaseCapMax {
		return invalidf("%s %d is outside [1, %d]", kind, value, LeaseCapMax)
	}
	return nil
}

// checkOptionalLeaseCap checks a lease cap when one is given.
func checkOptionalLeaseCap(kind string, value *int) error {
	if value == nil {
		return nil
	}
	return checkLeaseCap(kind, *value)
}

// checkExpectedOwner checks an owner guard when one is given.
func checkExpectedOwner(owner string) error {
	if owner == "" {
		return nil
	}
	return checkName("expected owner", owner, usernameBytesMax)
}

// checkDeadLetters checks a topic's dead-letter setting on its own:
// MaxDeliveries within [0, MaxDeliveriesMax], set only with a
// dead-letter topic, which is a valid name other than the topic's own.
func checkDeadLetters(topicName string, maxDeliveries int, deadLetterTopic string) error {
	switch {
	case maxDeliveries < 0 || maxDeliveries > MaxDeliveriesMax:
		return invalidf("topic %q: max_deliveries %d, want 0 to %d", topicName, maxDeliveries, MaxDeliveriesMax)
	case maxDeliveries > 0 && deadLetterTopic == "":
		return invalidf("topic %q: max_deliveries %d needs a dead-letter topic", topicName, maxDeliveries)
	case deadLetterTopic == topicName:
		return invalidf("topic %q cannot be its own dead-letter topic", topicName)
	case deadLetterTopic != "":
		return checkName("dead-letter topic name", deadLetterTopic, nameBytesMax)
	}
	return nil
}

// checkOptionalParent checks the fan-out fields of a create: a delay
// only with a parent.
func checkOptionalParent(parent string, delayMs int64) error {
	if parent == "" && delayMs != 0 {
		return invalidf("fanout_delay_ms %d needs a parent", delayMs)
	}
	if parent == "" {
		return nil
	}
	return errors.Join(checkName("parent topic name", parent, nameBytesMax), checkFanoutDelay(delayMs))
}

// checkFanoutDelay checks a delay on its own: 0 to FanoutDelayMsMax.
func checkFanoutDelay(delayMs int64) error {
	if delayMs < 0 || delayMs > FanoutDelayMsMax {
		return invalidf("fan-out delay %d ms is outside [0, %d] (one year)", delayMs, FanoutDelayMsMax)
	}
	return nil
}

// Validate implements Command.
func (c AttachChild) Validate() error {
	return errors.Join(checkName("parent topic name", c.Parent, nameBytesMax),
		checkName("child topic name", c.Child, nameBytesMax), checkFanoutDelay(c.DelayMs),
		checkNonNegative("attached_at_ms", c.AttachedAtMs), checkExpectedOwner(c.ExpectedOwner))
}

// Validate implements Command.
func (c DetachChild) Validate() error {
	return errors.Join(checkName("parent topic name", c.Parent, nameBytesMax),
		checkName("child topic name", c.Child, nameBytesMax), checkExpectedOwner(c.ExpectedOwner))
}

// checkOptionalSchema checks a schema document when one is given.
func checkOptionalSchema(document []byte) error {
	if len(document) == 0 {
		return nil
	}
	return CheckSchemaDocument(document)
}

// Validate implements Command.
func (c DeleteTopic) Validate() error {
	return errors.Join(checkName("topic name", c.Name, nameBytesMax), checkExpectedOwner(c.ExpectedOwner))
}

// Validate implements Command.
func (c AlterTopic) Validate() error {
	if err := errors.Join(checkName("topic name", c.Name, nameBytesMax), checkExpectedOwner(c.ExpectedOwner)); err != nil {
		return err
	}
	if c.RetentionMs == nil && c.VisibilityTimeoutMs == nil && c.MaxInFlightPerPartition == nil &&
		c.MaxAckedAheadPerPartition == nil && c.Partitions == nil && len(c.Schema) == 0 &&
		c.MaxDeliveries == nil && c.DeadLetterTopic == nil {
		return invalidf("alter of topic %q changes nothing", c.Name)
	}
	if c.Partitions == nil && len(c.NewOwners) > 0 {
		return invalidf("alter of topic %q places new partitions without a partition count", c.Name)
	}
	if c.Partitions != nil && (*c.Partitions < 1 || *c.Partitions > PartitionsMax) {
		return invalidf("topic %q: %d partitions, want 1 to %d", c.Name, *c.Partitions, PartitionsMax)
	}
	return errors.Join(checkOptional("retention_ms", c.RetentionMs),
		checkOptional("visibility_timeout_ms", c.VisibilityTimeoutMs),
		checkOptionalLeaseCap("max_in_flight_per_partition", c.MaxInFlightPerPartition),
		checkOptionalLeaseCap("max_acked_ahead_per_partition", c.MaxAckedAheadPerPartition),
		checkNonNegative("schema_after_version", int64(c.SchemaAfterVersion)),
		checkOwners(c.NewOwners), checkOptionalSchema(c.Schema), c.checkDeadLetterFields())
}

// checkDeadLetterFields checks the dead-letter fields that are set on
// their own; apply checks the setting they leave.
func (c AlterTopic) checkDeadLetterFields() error {
	var problems []error
	if c.MaxDeliveries != nil && (*c.MaxDeliveries < 0 || *c.MaxDeliveries > MaxDeliveriesMax) {
		problems = append(problems, invalidf("topic %q: max_deliveries %d, want 0 to %d", c.Name, *c.MaxDeliveries, MaxDeliveriesMax))
	}
	if c.DeadLetterTopic != nil && *c.DeadLetterTopic == c.Name {
		problems = append(problems, invalidf("topic %q cannot be its own dead-letter topic", c.Name))
	}
	if c.DeadLetterTopic != nil && *c.DeadLetterTopic != "" {
		problems = append(problems, checkName("dead-letter topic name", *c.DeadLetterTopic, nameBytesMax))
	}
	return errors.Join(problems...)
}

// checkOptional checks an optional limit.
func checkOptional[T int | int64](kind string, value *T) error {
	if value == nil {
		return nil
	}
	return checkNonNegative(kind, int64(*value))
}

// Validate implements Command.
func (c MemberHeartbeat) Validate() error {
	return errors.Join(checkName("member id", c.ID, nameBytesMax),
		checkName("http address", c.HTTPAddr, nameBytesMax),
		checkName("cluster address", c.ClusterAddr, nameBytesMax),
		checkNonNegative("now_ms", c.NowMs), checkOptionalName("data id", c.DataID, nameBytesMax))
}

// Validate implements Command: one to HeartbeatsPerEntryMax beats, each
// valid, sorted by member id with none twice.
func (c MemberHeartbeats) Validate() error {
	if len(c.Beats) < 1 || len(c.Beats) > HeartbeatsPerEntryMax {
		return invalidf("%d heartbeats in one entry, want 1 to %d", len(c.Beats), HeartbeatsPerEntryMax)
	}
	for i, beat := range c.Beats {
		if err := beat.Validate(); err != nil {
			return err
		}
		if i > 0 && c.Beats[i-1].ID >= beat.ID {
			return invalidf("heartbeats not sorted by member id, or twice: %q before %q", c.Beats[i-1].ID, beat.ID)
		}
	}
	return nil
}

// Validate implements Command.
func (c MarkMemberDead) Validate() error {
	return errors.Join(checkName("member id", c.ID, nameBytesMax),
		checkNonNegative("observed_heartbeat_ms", c.ObservedHeartbeatMs))
}

// Validate implements Command.
func (c SetDraining) Validate() error { return checkName("member id", c.ID, nameBytesMax) }

// Validate implements Command.
func (c RemoveMember) Validate() error { return checkName("member id", c.ID, nameBytesMax) }

// Validate implements Command.
func (c SetTarget) Validate() error {
	if c.Target == c.ExpectedOwner {
		return invalidf("move of %s/%d targets its own owner %q", c.Topic, c.Partition, c.Target)
	}
	return errors.Join(checkName("topic name", c.Topic, nameBytesMax), checkPartition(c.Partition),
		checkName("expected owner", c.ExpectedOwner, nameBytesMax),
		checkName("target", c.Target, nameBytesMax), checkNonNegative("now_ms", c.NowMs))
}

// Validate implements Command.
func (c CompleteMove) Validate() error {
	return checkFlip(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget)
}

// Validate implements Command.
func (c ForcePromote) Validate() error {
	return checkFlip(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget)
}

// checkFlip checks the fields of CompleteMove and ForcePromote.
func checkFlip(topic string, partition int, expectedOwner, expectedTarget string) error {
	return errors.Join(checkName("topic name", topic, nameBytesMax), checkPartition(partition),
		checkName("expected owner", expectedOwner, nameBytesMax),
		checkName("expected target", expectedTarget, nameBytesMax))
}

// Validate implements Command.
func (c AbortMove) Validate() error {
	return errors.Join(checkName("topic name", c.Topic, nameBytesMax), checkPartition(c.Partition),
		checkName("expected target", c.ExpectedTarget, nameBytesMax), checkNonNegative("expected_started_at_ms", c.ExpectedStartedAtMs))
}

// Validate implements Command.
func (c PutUser) Validate() error {
	return errors.Join(checkPasswordHash(c.Username, c.PasswordHash),
		checkName("username", c.Username, usernameBytesMax), checkGrantBounds(c.Grants),
		checkNonNegative("now_ms", c.NowMs))
}

// Validate implements Command.
func (c SetPassword) Validate() error {
	return errors.Join(checkPasswordHash(c.Username, c.PasswordHash),
		checkName("username", c.Username, usernameBytesMax), checkNonNegative("now_ms", c.NowMs))
}

// checkPasswordHash checks the size of a password hash.
func checkPasswordHash(username string, hash []byte) error {
	if len(hash) == 0 || len(hash) > passwordHashBytesMax {
		return invalidf("user %q: password hash of %d bytes, want 1 to %d", username, len(hash), passwordHashBytesMax)
	}
	return nil
}

// Validate implements Command.
func (c DeleteUser) Validate() error { return checkName("username", c.Username, usernameBytesMax) }

// Validate implements Command.
func (c SetGrants) Validate() error {
	return errors.Join(checkName("username", c.Username, usernameBytesMax), checkGrantBounds(c.Grants),
		checkNonNegative("now_ms", c.NowMs))
}
