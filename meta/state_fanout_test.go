package meta

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// fanoutSetup: members m1..m3 and standalone topics p (kept two hours),
// c, d, e on them.
func fanoutSetup() []Command {
	parent := createTopic("p", "m1", "m2", "m3")
	parent.RetentionMs = 2 * 3_600_000
	return []Command{heartbeat("m1", 100), heartbeat("m2", 100), heartbeat("m3", 100),
		parent, createTopic("c", "m2", "m3", "m1"),
		createTopic("d", "m3", "m1", "m2"), createTopic("e", "m1", "m2", "m3")}
}

func topicOf(t *testing.T, s *State, name string) TopicRecord {
	t.Helper()
	record, found := s.Topic(name)
	require.True(t, found, "topic %q", name)
	return record
}

// Property: an attach links both sides with a fresh epoch, and a detach
// and a re-attach give a new one; the image keeps the links.
func TestAttachAndDetach(t *testing.T) {
	s := stateWith(t, fanoutSetup()...)
	require.NoError(t, AttachChild{Parent: "p", Child: "c", AttachedAtMs: 5}.apply(s))
	parent, child := topicOf(t, s, "p"), topicOf(t, s, "c")
	require.Equal(t, RoleParent, parent.Role())
	require.Equal(t, RoleChild, child.Role())
	require.Equal(t, RoleStandalone, topicOf(t, s, "d").Role())
	require.Equal(t, "p", child.Parent)
	require.NotZero(t, child.AttachEpoch)
	require.Equal(t, []ChildLink{{Name: "c", Epoch: child.AttachEpoch, AttachedAtMs: 5}}, parent.Children)
	require.Contains(t, s.dirty, recordKey{string(bucketTopics), "p"})
	require.Contains(t, s.dirty, recordKey{string(bucketTopics), "c"})

	requireRejected(t, s, DetachChild{Parent: "p", Child: "d"}, ErrNotAttached)
	requireRejected(t, s, DetachChild{Parent: "ghost", Child: "c"}, ErrTopicNotFound)
	require.NoError(t, DetachChild{Parent: "p", Child: "c"}.apply(s))
	require.Equal(t, RoleStandalone, topicOf(t, s, "p").Role())
	require.Equal(t, RoleStandalone, topicOf(t, s, "c").Role())
	require.Zero(t, topicOf(t, s, "c").AttachEpoch)

	require.NoError(t, AttachChild{Parent: "p", Child: "c", AttachedAtMs: 6}.apply(s))
	require.NotEqual(t, child.AttachEpoch, topicOf(t, s, "c").AttachEpoch, "a re-attach is a new epoch")
	decoded, err := decodeImage(s.encodeImage())
	require.NoError(t, err)
	require.Equal(t, string(s.encodeImage()), string(decoded.encodeImage()))
	require.NoError(t, AttachChild{Parent: "p", Child: "d"}.apply(decoded))
	require.NotEqual(t, topicOf(t, s, "c").AttachEpoch, topicOf(t, decoded, "d").AttachEpoch,
		"the epoch sequence survives the image")
}

// Property: every role rule of an attach is checked, and a refused attach
// changes nothing.
func TestAttachRoleRules(t *testing.T) {
	s := stateWith(t, append(fanoutSetup(), AttachChild{Parent: "p", Child: "c"})...)
	requireRejected(t, s, AttachChild{Parent: "p", Child: "p"}, ErrFanoutRole)
	requireRejected(t, s, AttachChild{Parent: "p", Child: "c"}, ErrFanoutRole) // already attached
	requireRejected(t, s, AttachChild{Parent: "c", Child: "d"}, ErrFanoutRole) // a child cannot be a parent
	requireRejected(t, s, AttachChild{Parent: "d", Child: "p"}, ErrFanoutRole) // a parent cannot be a child
	requireRejected(t, s, AttachChild{Parent: "d", Child: "c"}, ErrFanoutRole) // one parent
	requireRejected(t, s, AttachChild{Parent: "ghost", Child: "d"}, ErrTopicNotFound)
	requireRejected(t, s, AttachChild{Parent: "p", Child: "ghost"}, ErrTopicNotFound)
	requireRejected(t, s, AttachChild{Parent: "p", Child: "d", DelayMs: -1}, ErrInvalidCommand)
	requireRejected(t, s, AttachChild{Parent: "p", Child: "d", DelayMs: FanoutDelayMsMax + 1}, ErrInvalidCommand)
	requireRejected(t, s, AttachChild{Parent: "", Child: "d"}, ErrInvalidCommand)
}

// Property: a delay must leave the parent's retention an hour of margin,
// and a parent's retention may not drop below an attached delay's cover.
func TestAttachDelayAgainstRetention(t *testing.T) {
	s := stateWith(t, fanoutSetup()...)
	longer := int64(3 * 3_600_000)
	require.NoError(t, AlterTopic{Name: "p", RetentionMs: &longer}.apply(s))
	requireRejected(t, s, AttachChild{Parent: "p", Child: "c", DelayMs: 2*3_600_000 + 1}, ErrFanoutDelay)
	require.NoError(t, AttachChild{Parent: "p", Child: "c", DelayMs: 2 * 3_600_000}.apply(s))
	require.Equal(t, int64(2*3_600_000), topicOf(t, s, "c").FanoutDelayMs)

	shorter := int64(3*3_600_000 - 1)
	requireRejected(t, s, AlterTopic{Name: "p", RetentionMs: &shorter}, ErrFanoutDelay)
	forever := int64(0)
	require.NoError(t, AlterTopic{Name: "p", RetentionMs: &forever}.apply(s), "a parent that keeps forever covers any delay")
	require.NoError(t, AttachChild{Parent: "p", Child: "d", DelayMs: FanoutDelayMsMax}.apply(s))
}

// Property: a parent has at most FanoutChildrenMax children.
func TestAttachChildLimit(t *testing.T) {
	setup := []Command{heartbeat("m1", 100), createTopic("p", "m1")}
	for i := range FanoutChildrenMax + 1 {
		setup = append(setup, createTopic(fmt.Sprintf("c%03d", i), "m1"))
	}
	s := stateWith(t, setup...)
	for i := range FanoutChildrenMax {
		require.NoError(t, AttachChild{Parent: "p", Child: fmt.Sprintf("c%03d", i)}.apply(s))
	}
	requireLimit(t, s, AttachChild{Parent: "p", Child: fmt.Sprintf("c%03d", FanoutChildrenMax)}, LimitChildren)
	require.NoError(t, s.checkFanoutLinks())
}

// Property: a child's schema is absent (it adopts the parent's versions)
// or byte-identical; the parent manages it afterwards.
func TestAttachSchemaRules(t *testing.T) {
	withSchema := func(name, document string, owners ...string) CreateTopic {
		c := createTopic(name, owners...)
		c.Schema = json.RawMessage(document)
		return c
	}
	s := stateWith(t, heartbeat("m1", 100), withSchema("p", personSchema, "m1"), createTopic("bare", "m1"),
		withSchema("same", personSchema, "m1"), withSchema("other", string(schemaWith("x")), "m1"),
		createTopic("plain", "m1"))
	requireRejected(t, s, AttachChild{Parent: "p", Child: "other"}, ErrFanoutSchema)
	requireRejected(t, s, AttachChild{Parent: "plain", Child: "same"}, ErrFanoutSchema)
	require.NoError(t, AttachChild{Parent: "p", Child: "same"}.apply(s))
	require.NoError(t, AttachChild{Parent: "p", Child: "bare"}.apply(s))
	require.Equal(t, topicOf(t, s, "p").Schemas, topicOf(t, s, "bare").Schemas, "a child without a schema adopts its parent's")

	requireRejected(t, s, AlterTopic{Name: "bare", Schema: schemaWith("y"), SchemaAfterVersion: 1}, ErrFanoutSchema)
	require.NoError(t, AlterTopic{Name: "p", Schema: schemaWith("y"), SchemaAfterVersion: 1}.apply(s))
	for _, name := range []string{"bare", "same"} {
		latest, _ := topicOf(t, s, name).LatestSchema()
		require.JSONEq(t, string(schemaWith("y")), string(latest.Document), "child %s follows its parent's schema", name)
	}
	require.NoError(t, s.checkImage(s.image()))
}

// Property: deleting a parent leaves its children standalone; deleting a
// child takes it off its parent's list.
func TestDeleteDissolvesLinks(t *testing.T) {
	s := stateWith(t, append(fanoutSetup(), AttachChild{Parent: "p", Child: "c"}, AttachChild{Parent: "p", Child: "d", DelayMs: 1})...)
	require.NoError(t, DeleteTopic{Name: "c"}.apply(s))
	require.Equal(t, []string{"d"}, childNames(topicOf(t, s, "p")))
	require.NoError(t, DeleteTopic{Name: "p"}.apply(s))
	d := topicOf(t, s, "d")
	require.Equal(t, RoleStandalone, d.Role())
	require.Zero(t, d.FanoutDelayMs)
	require.NoError(t, s.checkFanoutLinks())
}

func childNames(record TopicRecord) []string {
	var names []string
	for _, link := range record.Children {
		names = append(names, link.Name)
	}
	return names
}

// Property: a create with a parent attaches in the same command, and a
// refused attach creates nothing.
func TestCreateWithParent(t *testing.T) {
	s := stateWith(t, append(fanoutSetup(), AttachChild{Parent: "p", Child: "c"})...)
	create := createTopic("new", "m1", "m2", "m3")
	create.Parent, create.FanoutDelayMs = "p", 60_000
	require.NoError(t, create.apply(s))
	record := topicOf(t, s, "new")
	require.Equal(t, "p", record.Parent)
	require.Equal(t, int64(60_000), record.FanoutDelayMs)
	require.Equal(t, []string{"c", "new"}, childNames(topicOf(t, s, "p")))

	for _, c := range []struct {
		parent  string
		delayMs int64
		want    error
	}{{"ghost", 0, ErrTopicNotFound}, {"c", 0, ErrFanoutRole}, {"p", 3_600_001, ErrFanoutDelay}, {"", 5, ErrInvalidCommand}} {
		bad := createTopic("other", "m1")
		bad.Parent, bad.FanoutDelayMs = c.parent, c.delayMs
		requireRejected(t, s, bad, c.want)
	}
}

// Property: an image whose links disagree does not load.
func TestImageWithBrokenLinksIsRefused(t *testing.T) {
	s := stateWith(t, append(fanoutSetup(), AttachChild{Parent: "p", Child: "c"})...)
	broken := []func(*State){
		func(s *State) { s.topics["c"].AttachEpoch++ },
		func(s *State) { s.topics["c"].Parent = "" },
		func(s *State) { s.topics["p"].Children = nil },
		func(s *State) { s.topics["d"].FanoutDelayMs = 5 },
		func(s *State) { s.topics["p"].Parent, s.topics["p"].AttachEpoch = "e", 1 },
	}
	for i, breakIt := range broken {
		copied, err := decodeImage(s.encodeImage())
		require.NoError(t, err)
		breakIt(copied)
		_, err = decodeImage(copied.encodeImage())
		require.ErrorIs(t, err, ErrMalformedSnapshot, "broken image %d", i)
	}
}

// Property: the fan-out commands survive their encoding.
func TestFanoutCommandsRoundTrip(t *testing.T) {
	for _, cmd := range []Command{AttachChild{Parent: "p", Child: "c", DelayMs: 7, AttachedAtMs: 9},
		DetachChild{Parent: "p", Child: "c"}} {
		data, err := EncodeCommand(ProposalID{Node: "n", Term: 1, Sequence: 2}, cmd)
		require.NoError(t, err)
		_, decoded, err := DecodeCommand(data)
		require.NoError(t, err)
		require.Equal(t, cmd, decoded)
	}
}

// Property: a delay child takes no dead letters: it cannot be named a
// dead-letter topic, and a dead-letter topic cannot become a delay child
// (a dead letter would reach it before its delay).
func TestDelayChildTakesNoDeadLetters(t *testing.T) {
	s := stateWith(t, append(fanoutSetup(), AttachChild{Parent: "p", Child: "c", DelayMs: 60_000})...)
	withDeadLetters := createTopic("q", "m1")
	withDeadLetters.MaxDeliveries, withDeadLetters.DeadLetterTopic = 3, "c"
	requireRejected(t, s, withDeadLetters, ErrFanoutRole)
	withDeadLetters.DeadLetterTopic = "d"
	require.NoError(t, withDeadLetters.apply(s))
	requireRejected(t, s, AttachChild{Parent: "p", Child: "d", DelayMs: 1}, ErrFanoutRole)
	require.NoError(t, AttachChild{Parent: "p", Child: "d"}.apply(s), "a plain child may take dead letters")
}

// deadLettersTo is an alter of this release that sends name's dead
// letters to target.
func deadLettersTo(name, target string) AlterTopic {
	return AlterTopic{Name: name, MaxDeliveries: new(3), DeadLetterTopic: new(target), DeadLetterLinksChecked: true}
}

// Property: dead letters never run along a fan-out link. A child whose
// dead-letter topic is its own parent would have each dead letter copied
// back to it, and to every sibling, without end; a parent whose
// dead-letter topic is its child would deliver each dead letter there
// twice. Commands of this release refuse both, on create, alter and
// attach, and change nothing; other chains pass.
func TestDeadLettersDoNotRunAlongAFanoutLink(t *testing.T) {
	s := stateWith(t, append(fanoutSetup(), AttachChild{Parent: "p", Child: "c", DeadLetterLinksChecked: true})...)
	child := createTopic("new", "m1")
	child.Parent, child.MaxDeliveries, child.DeadLetterTopic = "p", 3, "p"
	requireRejected(t, s, child, ErrFanoutRole)
	child.MaxDeliveries = 0 // kept but unused: a later alter of max_deliveries alone would start the loop
	requireRejected(t, s, child, ErrFanoutRole)
	require.ErrorContains(t, child.apply(s), `topic "new" cannot send its dead letters to its fan-out parent "p"`)

	requireRejected(t, s, deadLettersTo("c", "p"), ErrFanoutRole)
	requireRejected(t, s, deadLettersTo("p", "c"), ErrFanoutRole)
	require.ErrorContains(t, deadLettersTo("p", "c").apply(s), `topic "p" cannot send its dead letters to its fan-out child "c"`)

	require.NoError(t, deadLettersTo("d", "p").apply(s), "a standalone topic may send its dead letters to a parent")
	requireRejected(t, s, AttachChild{Parent: "p", Child: "d", DeadLetterLinksChecked: true}, ErrFanoutRole)
	require.NoError(t, deadLettersTo("p", "e").apply(s), "a parent may send its dead letters to a standalone topic")
	requireRejected(t, s, AttachChild{Parent: "p", Child: "e", DeadLetterLinksChecked: true}, ErrFanoutRole)

	require.NoError(t, deadLettersTo("c", "d").apply(s), "a child may send its dead letters elsewhere, even on to its parent")
	child.DeadLetterTopic = "c"
	require.NoError(t, child.apply(s), "a child may send its dead letters to a sibling")
	require.NoError(t, s.checkImage(s.image()))
}

// Property: entries of an earlier release that send dead letters along a
// fan-out link apply as they did on every replica, and the topics keep
// working: their other changes pass, and so does a dead-letter change of
// one side that the other side's setting does not concern.
func TestEarlierDeadLetterLinksKeepWorking(t *testing.T) {
	s := stateWith(t, fanoutSetup()...)
	toParent, toChild := deadLettersTo("c", "p"), deadLettersTo("p", "c")
	toParent.DeadLetterLinksChecked, toChild.DeadLetterLinksChecked = false, false
	require.NoError(t, toParent.apply(s))
	require.NoError(t, AttachChild{Parent: "p", Child: "c"}.apply(s), "an attach of an earlier release")
	require.NoError(t, toChild.apply(s), "an alter of an earlier release")

	retention := int64(3 * 3_600_000)
	require.NoError(t, AlterTopic{Name: "c", RetentionMs: &retention, MaxDeliveries: new(5)}.apply(s))
	require.NoError(t, AlterTopic{Name: "p", RetentionMs: &retention, MaxDeliveries: new(5)}.apply(s))
	requireRejected(t, s, deadLettersTo("c", "p"), ErrFanoutRole)
	require.NoError(t, deadLettersTo("c", "d").apply(s), "the parent's setting is not the child's change")
	requireRejected(t, s, deadLettersTo("p", "c"), ErrFanoutRole)
	off := AlterTopic{Name: "p", MaxDeliveries: new(0), DeadLetterTopic: new(""), DeadLetterLinksChecked: true}
	require.NoError(t, off.apply(s), "the double delivery can be turned off")
	require.Empty(t, topicOf(t, s, "p").DeadLetterTopic)
}
