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

// commandVersion1 is the first (and so far only) version of every command
// body. When a body changes incompatibly, its command gets version 2 with
// its own struct, and the decoder keeps reading version 1 and converting.
const commandVersion1 = 1

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
	data := append([]byte{byte(cmd.Type()), commandVersion1}, envelope...)
	if len(data) > commandBytesMax {
		return nil, fmt.Errorf("%w: %T encodes to %d bytes, at most %d", ErrCommandTooLarge, cmd, len(data), commandBytesMax)
	}
	return data, nil
}

// DecodeCommand decodes what EncodeCommand produced. It rejects an unknown
// command number or version (ErrUnknownCommand), and bytes that are too
// long, truncated, carry unknown fields or trailing data
// (ErrMalformedCommand). It does not Validate the command.
func DecodeCommand(data []byte) (ProposalID, Command, error) {
	if len(data) < commandHeaderBytes || len(data) > commandBytesMax {
		return ProposalID{}, nil, fmt.Errorf("%w: %d bytes, want %d to %d", ErrMalformedCommand, len(data), commandHeaderBytes, commandBytesMax)
	}
	commandType, version := CommandType(data[0]), data[1]
	if version != commandVersion1 {
		return ProposalID{}, nil, fmt.Errorf("%w: type %d version %d", ErrUnknownCommand, commandType, version)
	}
	var envelope commandEnvelope
	if err := decodeStrict(data[commandHeaderBytes:], &envelope); err != nil {
		return ProposalID{}, nil, err
	}
	cmd, err := decodeBody(commandType, envelope.Command)
	return envelope.Proposal, cmd, err
}

// decodeBody decodes the JSON body of a command of the given type.
func decodeBody(commandType CommandType, body json.RawMessage) (Command, error) {
	switch commandType {
	case TypeCreateTopic:
		return decodeAs[CreateTopic](body)
	case TypeDeleteTopic:
		return decodeAs[DeleteTopic](body)
	case TypeAlterTopic:
		return decodeAs[AlterTopic](body)
	case TypeMemberHeartbeat:
		return decodeAs[MemberHeartbeat](body)
	case TypeMarkMemberDead:
		return decodeAs[MarkMemberDead](body)
	case TypeSetDraining:
		return decodeAs[SetDraining](body)
	case TypeRemoveMember:
		return decodeAs[RemoveMember](body)
	case TypeSetTarget:
		return decodeAs[SetTarget](body)
	case TypeCompleteMove:
		return decodeAs[CompleteMove](body)
	case TypeAbortMove:
		return decodeAs[AbortMove](body)
	case TypeForcePromote:
		return decodeAs[ForcePromote](body)
	case TypePutUser:
		return decodeAs[PutUser](body)
	case TypeDeleteUser:
		return decodeAs[DeleteUser](body)
	case TypeSetGrants:
		return decodeAs[SetGrants](body)
	case TypeSetPassword:
		return decodeAs[SetPassword](body)
	case TypeAttachChild:
		return decodeAs[AttachChild](body)
	case TypeDetachChild:
		return decodeAs[DetachChild](body)
	}
	return nil, fmt.Errorf("%w: type %d", ErrUnknownCommand, commandType)
}

// decodeAs decodes body strictly into a command of type T.
func decodeAs[T Command](body json.RawMessage) (Command, error) {
	var cmd T
	if err := decodeStrict(body, &cmd); err != nil {
		return nil, err
	}
	return cmd, nil
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
