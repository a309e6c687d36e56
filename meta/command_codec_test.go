package meta

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// everyCommand holds one example of each command with every field set.
func everyCommand() []Command {
	retention, visibility, inFlight, ackedAhead, partitions := int64(1), int64(2), 3, 4, 5
	grants := []Grant{{Action: "produce", Patterns: []string{"a*", "b"}}, {Action: "admin"}}
	return []Command{
		CreateTopic{Name: "t", RetentionMs: 1, VisibilityTimeoutMs: 2, MaxInFlightPerPartition: 3,
			MaxAckedAheadPerPartition: 4, CreatedAtMs: 5, CreatedBy: "ann", Owners: []string{"a", "b"}, Numbered: true,
			NamesFolded: true, DeadLetterLinksChecked: true, SameSchemaAttached: true, Schema: []byte(`{"type":"object"}`)},
		DeleteTopic{Name: "t", ExpectedOwner: "ann", ExpectedCreation: ExpectedCreation{ExpectedIncarnation: 3, ExpectedCreatedAtMs: 5}},
		AlterTopic{Name: "t", ExpectedCreation: ExpectedCreation{ExpectedIncarnation: 3, ExpectedCreatedAtMs: 5}, RetentionMs: &retention, VisibilityTimeoutMs: &visibility, MaxInFlightPerPartition: &inFlight,
			MaxAckedAheadPerPartition: &ackedAhead, Partitions: &partitions, NewOwners: []string{"c", "d", "e"},
			Schema: []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), SchemaAfterVersion: 1,
			TupleItemsCompared: true, PrefixItemsCompared: true, DeadLetterLinksChecked: true, SameSchemaKept: true},
		MemberHeartbeat{ID: "a", HTTPAddr: "a:1", ClusterAddr: "a:2", NowMs: 3},
		MarkMemberDead{ID: "a", ObservedHeartbeatMs: 3},
		SetDraining{ID: "a", Draining: true},
		RemoveMember{ID: "a"},
		SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "a", Target: "b", NowMs: 9, MovesMax: 8},
		CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "a", ExpectedTarget: "b"},
		AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "b"},
		AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "b", ExpectedStartedAtMs: 77},
		CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "a", ExpectedTarget: "b", ExpectedStartedAtMs: 77,
			ExpectedCreation: ExpectedCreation{ExpectedIncarnation: 3, ExpectedCreatedAtMs: 5}},
		AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "b", ExpectedStartedAtMs: 77, ExpectedCreation: ExpectedCreation{ExpectedIncarnation: 3, ExpectedCreatedAtMs: 5}},
		ForcePromote{Topic: "t", Partition: 1, ExpectedOwner: "a", ExpectedTarget: "b", ExpectedStartedAtMs: 77,
			ExpectedCreation: ExpectedCreation{ExpectedIncarnation: 3, ExpectedCreatedAtMs: 5}},
		ForcePromote{Topic: "t", Partition: 1, ExpectedOwner: "a", ExpectedTarget: "b"},
		PutUser{Username: "ann", PasswordHash: []byte{0, 1, 2, 255}, Root: true, Grants: grants, CreateOnly: true, NowMs: 7},
		DeleteUser{Username: "ann"},
		SetGrants{Username: "ann", Grants: grants, NowMs: 8},
		SetPassword{Username: "ann", PasswordHash: []byte("h2"), NowMs: 9},
		AttachChild{Parent: "t", Child: "c", DelayMs: 1000, AttachedAtMs: 10, DeadLetterLinksChecked: true, SameSchemaAttached: true},
		DetachChild{Parent: "t", Child: "c"},
		MemberHeartbeats{Beats: []MemberHeartbeat{{ID: "a", HTTPAddr: "a:1", ClusterAddr: "a:2", NowMs: 3},
			{ID: "b", HTTPAddr: "b:1", ClusterAddr: "b:2", NowMs: 4}}},
	}
}

// Property: every command encodes and decodes to itself, with its number
// and version (2: bound to its term) in the first two bytes; version 1,
// the same body, still decodes.
func TestCommandRoundTrip(t *testing.T) {
	id := ProposalID{Node: "n1", Term: 3, Sequence: 42}
	seen := map[CommandType]bool{}
	for _, cmd := range everyCommand() {
		require.NoError(t, cmd.Validate(), "%T", cmd)
		data, err := EncodeCommand(id, cmd)
		require.NoError(t, err)
		require.Equal(t, []byte{byte(cmd.Type()), commandVersion2}, data[:2])
		gotID, got, err := DecodeCommand(data)
		require.NoError(t, err, "%T", cmd)
		require.Equal(t, id, gotID)
		require.Equal(t, cmd, got)
		written := append([]byte{data[0], commandVersion1}, data[2:]...)
		_, got, err = DecodeCommand(written)
		require.NoError(t, err, "%T", cmd)
		require.Equal(t, cmd, got, "the same command written as version 1 by an earlier release")
		seen[cmd.Type()] = true
	}
	require.Len(t, seen, int(TypeMemberHeartbeats), "every command number has an example")
}

// Property: command numbers are a frozen, append-only contract.
func TestCommandNumbersAreFrozen(t *testing.T) {
	want := map[CommandType]Command{1: CreateTopic{}, 2: DeleteTopic{}, 3: AlterTopic{}, 4: MemberHeartbeat{},
		5: MarkMemberDead{}, 6: SetDraining{}, 7: RemoveMember{}, 8: SetTarget{}, 9: CompleteMove{}, 10: AbortMove{},
		11: ForcePromote{}, 12: PutUser{}, 13: DeleteUser{}, 14: SetGrants{}, 15: SetPassword{}, 16: AttachChild{},
		17: DetachChild{}, 18: MemberHeartbeats{}}
	for number, cmd := range want {
		require.Equal(t, number, cmd.Type(), "%T was renumbered", cmd)
	}
}

// Property: the decoder rejects unknown numbers and versions and malformed
// bytes, and never panics on them.
func TestDecodeCommandRejects(t *testing.T) {
	good, err := EncodeCommand(ProposalID{Node: "n1", Term: 1, Sequence: 1}, DeleteTopic{Name: "t"})
	require.NoError(t, err)
	withHeader := func(commandType CommandType, version byte) []byte {
		return append([]byte{byte(commandType), version}, good[2:]...)
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"unknown number", withHeader(99, commandVersion1), ErrUnknownCommand},
		{"number zero", withHeader(0, commandVersion1), ErrUnknownCommand},
		{"unknown version", withHeader(TypeDeleteTopic, 3), ErrUnknownCommand},
		{"version zero", withHeader(TypeDeleteTopic, 0), ErrUnknownCommand},
		{"empty", nil, ErrMalformedCommand},
		{"header only", good[:2], ErrMalformedCommand},
		{"truncated", good[:len(good)-3], ErrMalformedCommand},
		{"trailing data", append(bytes.Clone(good), '{', '}'), ErrMalformedCommand},
		{"trailing brace", append(bytes.Clone(good), '}'), ErrMalformedCommand},
		{"unknown field", []byte("\x02\x01" + `{"proposal":{},"command":{"name":"t","extra":1}}`), ErrMalformedCommand},
		{"unknown envelope field", []byte("\x02\x01" + `{"proposal":{},"command":{},"x":1}`), ErrMalformedCommand},
		{"wrong body type", []byte("\x02\x01" + `{"proposal":{},"command":{"name":5}}`), ErrMalformedCommand},
		{"no command", []byte("\x02\x01" + `{"proposal":{}}`), ErrMalformedCommand},
		{"null command", []byte("\x02\x01" + `{"proposal":{},"command":null}`), ErrMalformedCommand},
		{"command not an object", []byte("\x02\x01" + `{"proposal":{},"command":[]}`), ErrMalformedCommand},
		{"oversized", append([]byte{byte(TypeDeleteTopic), commandVersion1}, make([]byte, commandBytesMax)...), ErrMalformedCommand},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, cmd, err := DecodeCommand(tc.data)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, cmd)
		})
	}
}

// Property: the proposer cannot encode a command over the bound.
func TestEncodeCommandTooLarge(t *testing.T) {
	owners := make([]string, PartitionsMax)
	for i := range owners {
		owners[i] = strings.Repeat("o", nameBytesMax)
	}
	_, err := EncodeCommand(ProposalID{}, CreateTopic{Name: "t", Owners: owners})
	require.ErrorIs(t, err, ErrCommandTooLarge)
}

// Property: Validate refuses what apply would reject structurally.
func TestValidateRefusesBadCommands(t *testing.T) {
	negative, zero := int64(-1), 0
	bad := []Command{
		CreateTopic{Name: "t"},
		CreateTopic{Name: strings.Repeat("x", nameBytesMax+1), Owners: []string{"a"}},
		CreateTopic{Name: "t", Owners: []string{""}},
		AlterTopic{Name: "t", NewOwners: []string{"a"}, RetentionMs: &negative},
		AlterTopic{Name: "t", Partitions: &zero},
		MemberHeartbeat{ID: "a", HTTPAddr: "a:1", ClusterAddr: "a:2", NowMs: -1},
		MemberHeartbeats{},
		MemberHeartbeats{Beats: []MemberHeartbeat{heartbeat("b", 1), heartbeat("a", 1)}},
		MemberHeartbeats{Beats: []MemberHeartbeat{heartbeat("a", 1), heartbeat("a", 2)}},
		MemberHeartbeats{Beats: []MemberHeartbeat{heartbeat("a", 1), {ID: "b", NowMs: 1}}},
		MemberHeartbeats{Beats: make([]MemberHeartbeat, HeartbeatsPerEntryMax+1)},
		SetTarget{Topic: "t", Partition: -1, ExpectedOwner: "a", Target: "b"},
		SetTarget{Topic: "t", Partition: 0, ExpectedOwner: "a", Target: "a"},
		CompleteMove{Topic: "t", Partition: 0, ExpectedOwner: "a"},
		AbortMove{Topic: "t", Partition: PartitionsMax, ExpectedTarget: "b"},
		PutUser{Username: strings.Repeat("u", usernameBytesMax+1), PasswordHash: []byte("h")},
		PutUser{Username: "u", PasswordHash: make([]byte, passwordHashBytesMax+1)},
		SetGrants{Username: "u", Grants: make([]Grant, grantsPerUserMax+1)},
		SetPassword{Username: "u"},
		SetGrants{Username: "u", Grants: []Grant{{Action: "a", Patterns: make([]string, patternsPerGrantMax+1)}}},
	}
	for _, cmd := range bad {
		require.ErrorIs(t, cmd.Validate(), ErrInvalidCommand, "%T %+v", cmd, cmd)
	}
}

// Property: raft messages survive the transport encoding, and an oversized
// one is refused before decoding.
func TestMessageCodec(t *testing.T) {
	msg := &raftpb.Message{Type: raftpb.MsgApp.Enum(), To: new(uint64(2)), From: new(uint64(1)), Term: new(uint64(3)),
		Entries: []*raftpb.Entry{{Index: new(uint64(7)), Term: new(uint64(3)), Data: []byte("x")}}}
	data, err := MarshalMessage(msg)
	require.NoError(t, err)
	decoded, err := UnmarshalMessage(data)
	require.NoError(t, err)
	require.True(t, proto.Equal(msg, decoded), "%v != %v", msg, decoded)
	_, err = UnmarshalMessage(make([]byte, messageBytesMax+1))
	require.ErrorIs(t, err, ErrMessageTooLarge)
	_, err = UnmarshalMessage([]byte{0xff, 0xff, 0xff})
	require.Error(t, err)
}

// BenchmarkDecodeCommand measures the decoding of a heartbeat, the entry
// every replica applies most often.
func BenchmarkDecodeCommand(b *testing.B) {
	data, err := EncodeCommand(ProposalID{Node: "n1", Term: 3, Sequence: 41}, heartbeat("n1", 12_345))
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeCommand(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeCompleteMove measures the decoding of a move's end, which
// every replica applies once per move.
func BenchmarkDecodeCompleteMove(b *testing.B) {
	cmd := CompleteMove{Topic: "orders", Partition: 7, ExpectedOwner: "n1", ExpectedTarget: "n2", ExpectedStartedAtMs: 1_700_000_000_000,
		ExpectedCreation: ExpectedCreation{ExpectedIncarnation: 3, ExpectedCreatedAtMs: 1_699_000_000_000}}
	data, err := EncodeCommand(ProposalID{Node: "n2", Term: 3, Sequence: 41}, cmd)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeCommand(data); err != nil {
			b.Fatal(err)
		}
	}
}
