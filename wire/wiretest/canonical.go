package wiretest

import (
	"narad/msg"
)

// Canonical returns the value env takes after a round trip through the
// codec, as the package documentation of wire specifies it:
//
//   - empty byte slices and empty lists become nil, except
//     ConsumeResult.Messages, TopicPage.Topics, TopicDetail.PartitionStats,
//     MembersResult.Members and MovesResult.Moves, which become empty
//     non-nil slices;
//   - a non-nil error becomes a *msg.Error, CodeInternal with the error's
//     text for an error of another type.
//
// Error texts over wire.ErrorMessageBytesMax (which the codec cuts) and
// unknown protobuf fields of a Raft message (which it drops) are left as
// they are; the generators produce neither. Canonical never modifies env.
func Canonical(env msg.Envelope) msg.Envelope {
	switch m := env.Message.(type) {
	case msg.ForwardRequest:
		m.Request = canonicalRequest(m.Request)
		env.Message = m
	case msg.ForwardReply:
		m.Reply.Err = canonicalError(m.Reply.Err)
		m.Reply.Result = canonicalResult(m.Reply.Result)
		env.Message = m
	}
	return env
}

func canonicalRequest(request msg.Request) msg.Request {
	switch r := request.(type) {
	case msg.Produce:
		r.Records = nilIfEmpty(r.Records)
		r.Records = mapSlice(r.Records, func(record msg.ProduceRecord) msg.ProduceRecord {
			record.Key, record.Payload = nilIfEmpty(record.Key), nilIfEmpty(record.Payload)
			return record
		})
		return r
	case msg.Ack:
		r.Handles = nilIfEmpty(r.Handles)
		return r
	case msg.CreateTopic:
		r.Schema = nilIfEmpty(r.Schema)
		return r
	case msg.AlterTopic:
		r.Schema = nilIfEmpty(r.Schema)
		return r
	}
	return request
}

func canonicalResult(result msg.Result) msg.Result {
	switch r := result.(type) {
	case msg.TopicInfo:
		r.Children = nilIfEmpty(r.Children)
		return r
	case msg.TopicPage:
		r.Topics = emptyIfNil(mapSlice(r.Topics, canonicalTopicInfo))
		return r
	case msg.TopicDetail:
		r.TopicInfo = canonicalTopicInfo(r.TopicInfo)
		r.PartitionStats = emptyIfNil(r.PartitionStats)
		return r
	case msg.ProduceResult:
		r.Records = nilIfEmpty(r.Records)
		return r
	case msg.ConsumeResult:
		r.Messages = emptyIfNil(mapSlice(r.Messages, canonicalMessage))
		return r
	}
	return canonicalListResult(result)
}

func canonicalListResult(result msg.Result) msg.Result {
	switch r := result.(type) {
	case msg.ReplayResult:
		if r.Message != nil {
			m := canonicalMessage(*r.Message)
			r.Message = &m
		}
		return r
	case msg.AckResult:
		r.Results = nilIfEmpty(mapSlice(r.Results, func(item msg.AckItemResult) msg.AckItemResult {
			item.Err = canonicalError(item.Err)
			return item
		}))
		return r
	case msg.MembersResult:
		r.Members = emptyIfNil(r.Members)
		return r
	case msg.MovesResult:
		r.Moves = emptyIfNil(r.Moves)
		return r
	case msg.ChildrenResult:
		r.Children = emptyIfNil(r.Children)
		return r
	}
	return canonicalMoveResult(result)
}

func canonicalMoveResult(result msg.Result) msg.Result {
	switch r := result.(type) {
	case msg.MoveSourceState:
		r.Segments = nilIfEmpty(r.Segments)
		r.Leases = nilIfEmpty(r.Leases)
		r.Cursors = nilIfEmpty(r.Cursors)
		r.CorruptOffsets = nilIfEmpty(r.CorruptOffsets)
		return r
	case msg.MoveChunk:
		r.Data = nilIfEmpty(r.Data)
		return r
	}
	return result
}

func canonicalTopicInfo(info msg.TopicInfo) msg.TopicInfo {
	info.Children = nilIfEmpty(info.Children)
	return info
}

func canonicalMessage(m msg.Message) msg.Message {
	m.Key, m.Payload = nilIfEmpty(m.Key), nilIfEmpty(m.Payload)
	return m
}

func canonicalError(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*msg.Error); ok {
		return &msg.Error{Code: e.Code, Message: e.Message}
	}
	return &msg.Error{Code: msg.CodeInternal, Message: err.Error()}
}

// mapSlice returns a new slice of f applied to each element of s; nil
// stays nil and empty stays empty.
func mapSlice[T any](s []T, f func(T) T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func emptyIfNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
