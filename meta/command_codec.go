package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// commandHeaderBytes is the type byte and the version byte in front of
// every encoded command.
const commandHeaderBytes = 2

// The version byte. Versions 1 and 2 carry the same bodies; they differ
// in when an entry applies:
//   - commandVersion1: whenever it commits. Entries written by earlier
//     releases are read and applied as they were.
//   - commandVersion2, written since: only if raft appended it in the term
//     it was proposed in (ProposalID.Term). Otherwise it is refused with
//     ErrStaleProposal and changes nothing: a proposal forwarded to a
//     leader that lost its leadership cannot apply once a later leader has
//     committed an entry, so a proposer that applied an entry of a later
//     term knows its proposal will never apply (see Outcome).
//
// When a body changes incompatibly, its command gets a new version with
// its own struct, and the decoder keeps reading the old ones and
// converting.
const (
	commandVersion1 = 1
	commandVersion2 = 2
)

// commandEnvelope is the JSON body of an encoded command.
type commandEnvelope struct {
	Proposal ProposalID      `json:"proposal"`
	Command  json.RawMessage `json:"command"`
}

// EncodeCommand encodes cmd, proposed as id, into the bytes of a log
// entry: one byte of command type, one byte of version, then the JSON
// envelope {"proposal": id, "command": body}. The encoding is
// deterministic (encoding/json orders struct fields by declaration).
func EncodeCommand(id ProposalID, cmd Command) ([]byte, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("%w: encode %T: %v", ErrMalformedCommand, cmd, err)
	}
	envelope, err := json.Marshal(commandEnvelope{Proposal: id, Command: body})
	if err != nil {
		return nil, fmt.Errorf("%w: encode envelope of %T: %v", ErrMalformedCommand, cmd, err)
	}
	data := append([]byte{byte(cmd.Type()), commandVersion2}, envelope...)
	if len(data) > commandBytesMax {
		return nil, fmt.Errorf("%w: %T encodes to %d bytes, at most %d", ErrCommandTooLarge, cmd, len(data), commandBytesMax)
	}
	return data, nil
}

// DecodeCommand decodes what EncodeCommand produced. It rejects an unknown
// command number or version (ErrUnknownCommand), and bytes that are too
// long, truncated, lack the command, carry unknown fields or trailing data
// (ErrMalformedCommand). It does not Validate the command. The type byte
// names the body's type, so the envelope and the body are decoded in one
// pass (every replica decodes every entry it applies).
func DecodeCommand(data []byte) (ProposalID, Command, error) {
	if len(data) < commandHeaderBytes || len(data) > commandBytesMax {
		return ProposalID{}, nil, fmt.Errorf("%w: %d bytes, want %d to %d", ErrMalformedCommand, len(data), commandHeaderBytes, commandBytesMax)
	}
	commandType, version := CommandType(data[0]), data[1]
	if version != commandVersion1 && version != commandVersion2 {
		return ProposalID{}, nil, fmt.Errorf("%w: type %d version %d", ErrUnknownCommand, commandType, version)
	}
	return decodeEnvelope(commandType, data[commandHeaderBytes:])
}

// termBound reports whether an encoded command applies only in the term
// it was proposed in (commandVersion2). data is at least
// commandHeaderBytes long (DecodeCommand accepted it).
func termBound(data []byte) bool { return data[1] == commandVersion2 }

// decodeEnvelope decodes the JSON envelope of a command of the given type.
func decodeEnvelope(commandType CommandType, envelope []byte) (ProposalID, Command, error) {
	switch commandType {
	case TypeCreateTopic:
		return decodeAs[CreateTopic](envelope)
	case TypeDeleteTopic:
		return decodeAs[DeleteTopic](envelope)
	case TypeAlterTopic:
		return decodeAs[AlterTopic](envelope)
	case TypeMemberHeartbeat:
		return decodeAs[MemberHeartbeat](envelope)
	case TypeMarkMemberDead:
		return decodeAs[MarkMemberDead](envelope)
	case TypeSetDraining:
		return decodeAs[SetDraining](envelope)
	case TypeRemoveMember:
		return decodeAs[RemoveMember](envelope)
	case TypeSetTarget:
		return decodeCanonicalOr(envelope, (*canonicalScan).setTarget)
	case TypeCompleteMove:
		return decodeCanonicalOr(envelope, (*canonicalScan).completeMove)
	case TypeAbortMove:
		return decodeCanonicalOr(envelope, (*canonicalScan).abortMove)
	case TypeForcePromote:
		return decodeCanonicalOr(envelope, (*canonicalScan).forcePromote)
	case TypePutUser:
		return decodeAs[PutUser](envelope)
	case TypeDeleteUser:
		return decodeAs[DeleteUser](envelope)
	case TypeSetGrants:
		return decodeAs[SetGrants](envelope)
	case TypeSetPassword:
		return decodeAs[SetPassword](envelope)
	case TypeAttachChild:
		return decodeAs[AttachChild](envelope)
	case TypeDetachChild:
		return decodeAs[DetachChild](envelope)
	case TypeMemberHeartbeats:
		return decodeCanonicalOr(envelope, (*canonicalScan).heartbeats)
	}
	return ProposalID{}, nil, fmt.Errorf("%w: type %d", ErrUnknownCommand, commandType)
}

// envelopeOf is commandEnvelope with the body decoded as T; Command is nil
// when the envelope has none (or null).
type envelopeOf[T Command] struct {
	Proposal ProposalID `json:"proposal"`
	Command  *T         `json:"command"`
}

// decodeAs decodes an envelope strictly, its body as a command of type T.
func decodeAs[T Command](envelope []byte) (ProposalID, Command, error) {
	var decoded envelopeOf[T]
	if err := decodeStrict(envelope, &decoded); err != nil {
		return ProposalID{}, nil, err
	}
	if decoded.Command == nil {
		return ProposalID{}, nil, fmt.Errorf("%w: %T: no command", ErrMalformedCommand, decoded.Command)
	}
	return decoded.Proposal, *decoded.Command, nil
}

// decodeStrict decodes one JSON value with no unknown fields and nothing
// after it.
func decodeStrict(data []byte, into any) error {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(into); err != nil {
		return fmt.Errorf("%w: %T: %v", ErrMalformedCommand, into, err)
	}
	if _, err := decoder.Token(); err != io.EOF {
		return fmt.Errorf("%w: %T: trailing data", ErrMalformedCommand, into)
	}
	return nil
}
