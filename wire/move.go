package wire

import (
	"narad/msg"
)

// The requests and results of the move protocol (msg/move.go),
// which travel only between nodes. Split from request.go and result.go to
// keep each switch short; their defaults end here.

// moveRequest writes the type number and fields of a move protocol
// request, or records ErrUnknownType for a request of no known type.
func (e *encoder) moveRequest(request msg.Request) {
	switch r := request.(type) {
	case msg.MoveStatus:
		e.typeNumber(typeMoveStatus)
		e.moveOf(r.MoveOf)
	case msg.MoveRead:
		e.typeNumber(typeMoveRead)
		e.moveOf(r.MoveOf)
		e.uvarint(r.Base)
		e.varint(r.Position)
	case msg.MoveFreeze:
		e.typeNumber(typeMoveFreeze)
		e.moveOf(r.MoveOf)
	case msg.MoveSweepCheck:
		e.typeNumber(typeMoveSweepCheck)
		e.string(r.Topic, topicNameLimit)
		e.int(r.Partition)
	case msg.Decommission:
		e.typeNumber(typeDecommission)
		e.string(r.ID, nodeIDLimit)
		e.bool(r.Cancel)
	default:
		e.unknown("forwarded request", request)
	}
}

// moveRequest reads the fields of the move protocol request of type
// number t, or records ErrUnknownType for a number of no request.
func (d *decoder) moveRequest(t typeNumber) msg.Request {
	switch t {
	case typeMoveStatus:
		return msg.MoveStatus{MoveOf: d.moveOf()}
	case typeMoveRead:
		return msg.MoveRead{MoveOf: d.moveOf(), Base: d.uvarint(), Position: d.varint()}
	case typeMoveFreeze:
		return msg.MoveFreeze{MoveOf: d.moveOf()}
	case typeMoveSweepCheck:
		return msg.MoveSweepCheck{Topic: d.string(topicNameLimit), Partition: d.int()}
	case typeDecommission:
		return msg.Decommission{ID: d.string(nodeIDLimit), Cancel: d.bool()}
	default:
		d.unknown("forwarded request", t)
		return nil
	}
}

// moveResult writes the type number and fields of a move protocol result,
// or records ErrUnknownType for a result of no known type.
func (e *encoder) moveResult(result msg.Result) {
	switch r := result.(type) {
	case msg.MoveSourceState:
		e.typeNumber(typeMoveSourceState)
		e.moveSourceState(r)
	case msg.MoveChunk:
		e.typeNumber(typeMoveChunk)
		e.bytes(r.Data, chunkLimit)
	case msg.MoveVerdict:
		e.typeNumber(typeMoveVerdict)
		e.string(r.Owner, nodeIDLimit)
		e.string(r.Target, nodeIDLimit)
		e.uvarint(r.AppliedIndex)
	default:
		e.unknown("reply result", result)
	}
}

// moveResult reads the fields of the move protocol result of type number
// t, or records ErrUnknownType for a number of no result.
func (d *decoder) moveResult(t typeNumber) msg.Result {
	switch t {
	case typeMoveSourceState:
		return d.moveSourceState()
	case typeMoveChunk:
		return msg.MoveChunk{Data: d.bytes(chunkLimit)}
	case typeMoveVerdict:
		return msg.MoveVerdict{Owner: d.string(nodeIDLimit), Target: d.string(nodeIDLimit), AppliedIndex: d.uvarint()}
	default:
		d.unknown("reply result", t)
		return nil
	}
}

func (e *encoder) moveSourceState(r msg.MoveSourceState) {
	e.length(len(r.Segments), segmentsLimit)
	for _, segment := range r.Segments {
		e.uvarint(segment.Base)
		e.varint(segment.Size)
		e.bool(segment.Sealed)
	}
	e.uvarint(r.HWM)
	e.uvarint(r.Committed)
	e.bool(r.Frozen)
	e.uvarint(r.NextUndelivered)
	e.length(len(r.Leases), leasesLimit)
	for _, entry := range r.Leases {
		e.uvarint(entry.Offset)
		e.uvarint(uint64(entry.DeliveryCount))
		e.bool(entry.ReturnedUnseen)
	}
	e.length(len(r.Cursors), childrenLimit)
	for _, cursor := range r.Cursors {
		e.string(cursor.Child, topicNameLimit)
		e.uvarint(cursor.Epoch)
		e.uvarint(cursor.NextOffset)
	}
	e.uvarint(r.CorruptCount)
	e.length(len(r.CorruptOffsets), corruptOffsetsLimit)
	for _, offset := range r.CorruptOffsets {
		e.uvarint(offset)
	}
}

// moveSourceState reads a source state; an empty segment list decodes as
// nil (it is never printed as JSON).
func (d *decoder) moveSourceState() msg.MoveSourceState {
	var r msg.MoveSourceState
	if n := d.count(segmentsLimit, moveSegmentBytesMin); n > 0 {
		r.Segments = make([]msg.MoveSegment, n)
	}
	for i := range r.Segments {
		r.Segments[i] = msg.MoveSegment{Base: d.uvarint(), Size: d.varint(), Sealed: d.bool()}
	}
	r.HWM = d.uvarint()
	r.Committed = d.uvarint()
	r.Frozen = d.bool()
	r.NextUndelivered = d.uvarint()
	if n := d.count(leasesLimit, moveLeaseBytesMin); n > 0 {
		r.Leases = make([]msg.MoveLease, n)
	}
	for i := range r.Leases {
		r.Leases[i] = msg.MoveLease{Offset: d.uvarint(), DeliveryCount: d.uint32(), ReturnedUnseen: d.bool()}
	}
	if n := d.count(childrenLimit, fanoutCursorBytesMin); n > 0 {
		r.Cursors = make([]msg.FanoutCursor, n)
	}
	for i := range r.Cursors {
		r.Cursors[i] = msg.FanoutCursor{Child: d.string(topicNameLimit), Epoch: d.uvarint(), NextOffset: d.uvarint()}
	}
	r.CorruptCount = d.uvarint()
	if n := d.count(corruptOffsetsLimit, corruptOffsetBytesMin); n > 0 {
		r.CorruptOffsets = make([]uint64, n)
	}
	for i := range r.CorruptOffsets {
		r.CorruptOffsets[i] = d.uvarint()
	}
	return r
}

// moveOf writes the fields that name a move (msg.MoveOf).
func (e *encoder) moveOf(m msg.MoveOf) {
	e.string(m.Topic, topicNameLimit)
	e.int(m.Partition)
	e.string(m.Target, nodeIDLimit)
	e.varint(m.MoveStartedAtMs)
	e.uvarint(m.TopicIncarnation)
	e.varint(m.TopicCreatedAtMs)
}

// moveOf reads the fields that name a move (msg.MoveOf).
func (d *decoder) moveOf() msg.MoveOf {
	return msg.MoveOf{Topic: d.string(topicNameLimit), Partition: d.int(), Target: d.string(nodeIDLimit), MoveStartedAtMs: d.varint(),
		TopicIncarnation: d.uvarint(), TopicCreatedAtMs: d.varint()}
}
