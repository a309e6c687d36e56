package wire

import (
	"encoding/binary"

	"narad/msg"
)

// request writes the type number and fields of a forwarded request.
func (e *encoder) request(request msg.Request) {
	switch r := request.(type) {
	case msg.CreateTopic:
		e.typeNumber(typeCreateTopic)
		e.createTopic(r)
	case msg.ListTopics:
		e.typeNumber(typeListTopics)
		e.int(r.Limit)
		e.string(r.PageToken, pageTokenLimit)
	case msg.GetTopic:
		e.typeNumber(typeGetTopic)
		e.string(r.Name, topicNameLimit)
		e.int(r.Partition)
		e.bool(r.Confirm)
	case msg.AlterTopic:
		e.typeNumber(typeAlterTopic)
		e.alterTopic(r)
	case msg.DeleteTopic:
		e.typeNumber(typeDeleteTopic)
		e.string(r.Name, topicNameLimit)
		e.string(r.ExpectedOwner, nodeIDLimit)
	case msg.AttachChild:
		e.typeNumber(typeAttachChild)
		e.string(r.Parent, topicNameLimit)
		e.string(r.Child, topicNameLimit)
		e.varint(r.DelayMs)
		e.string(r.ExpectedOwner, nodeIDLimit)
	case msg.DetachChild:
		e.typeNumber(typeDetachChild)
		e.string(r.Parent, topicNameLimit)
		e.string(r.Child, topicNameLimit)
		e.string(r.ExpectedOwner, nodeIDLimit)
	case msg.ListChildren:
		e.typeNumber(typeListChildren)
		e.string(r.Parent, topicNameLimit)
	default:
		e.dataRequest(request)
	}
}

// dataRequest writes the requests of the data path and the cluster
// listings (split from request to keep each switch short).
func (e *encoder) dataRequest(request msg.Request) {
	switch r := request.(type) {
	case msg.Produce:
		e.typeNumber(typeProduce)
		e.produce(r)
	case msg.Consume:
		e.typeNumber(typeConsume)
		e.consume(r)
	case msg.Replay:
		e.typeNumber(typeReplay)
		e.string(r.Topic, topicNameLimit)
		e.int(r.Partition)
		e.uvarint(r.Offset)
		e.uvarint(r.TopicIncarnation)
		e.varint(r.TopicCreatedAtMs)
	case msg.Ack:
		e.typeNumber(typeAck)
		e.ack(r)
	case msg.ListMembers:
		e.typeNumber(typeListMembers)
	case msg.ListMoves:
		e.typeNumber(typeListMoves)
	default:
		e.moveRequest(request)
	}
}

// request reads the type number and fields of a forwarded request.
func (d *decoder) request() msg.Request {
	switch t := d.typeNumber(); t {
	case typeCreateTopic:
		return d.createTopic()
	case typeListTopics:
		return msg.ListTopics{Limit: d.int(), PageToken: d.string(pageTokenLimit)}
	case typeGetTopic:
		return msg.GetTopic{Name: d.string(topicNameLimit), Partition: d.int(), Confirm: d.bool()}
	case typeAlterTopic:
		return d.alterTopic()
	case typeDeleteTopic:
		return msg.DeleteTopic{Name: d.string(topicNameLimit), ExpectedOwner: d.string(nodeIDLimit)}
	case typeAttachChild, typeDetachChild, typeListChildren:
		return d.fanoutRequest(t)
	case typeProduce:
		return d.produce()
	case typeConsume:
		return d.consume()
	case typeReplay:
		return msg.Replay{Topic: d.string(topicNameLimit), Partition: d.int(), Offset: d.uvarint(), TopicIncarnation: d.uvarint(), TopicCreatedAtMs: d.varint()}
	case typeAck:
		return d.ack()
	case typeListMembers:
		return msg.ListMembers{}
	case typeListMoves:
		return msg.ListMoves{}
	default:
		return d.moveRequest(t)
	}
}

func (e *encoder) createTopic(r msg.CreateTopic) {
	e.string(r.Name, topicNameLimit)
	e.int(r.Partitions)
	e.varint(r.RetentionMs)
	e.varint(r.VisibilityTimeoutMs)
	e.int(r.InFlightMax)
	e.int(r.AckedAheadMax)
	e.bytes(r.Schema, schemaLimit)
	e.string(r.CreatedBy, nodeIDLimit)
	e.varint(r.CreatorCreatedAtMs)
	e.int(r.MaxDeliveries)
	e.string(r.DeadLetterTopic, topicNameLimit)
	e.string(r.Parent, topicNameLimit)
	e.varint(r.FanoutDelayMs)
	e.string(r.ExpectedOwner, nodeIDLimit)
}

// fanoutRequest reads the requests of fan-out.
func (d *decoder) fanoutRequest(t typeNumber) msg.Request {
	switch t {
	case typeAttachChild:
		return msg.AttachChild{Parent: d.string(topicNameLimit), Child: d.string(topicNameLimit), DelayMs: d.varint(),
			ExpectedOwner: d.string(nodeIDLimit)}
	case typeDetachChild:
		return msg.DetachChild{Parent: d.string(topicNameLimit), Child: d.string(topicNameLimit), ExpectedOwner: d.string(nodeIDLimit)}
	}
	return msg.ListChildren{Parent: d.string(topicNameLimit)}
}

func (d *decoder) createTopic() msg.CreateTopic {
	return msg.CreateTopic{
		Name:                d.string(topicNameLimit),
		Partitions:          d.int(),
		RetentionMs:         d.varint(),
		VisibilityTimeoutMs: d.varint(),
		InFlightMax:         d.int(),
		AckedAheadMax:       d.int(),
		Schema:              d.bytes(schemaLimit),
		CreatedBy:           d.string(nodeIDLimit),
		CreatorCreatedAtMs:  d.varint(),
		MaxDeliveries:       d.int(),
		DeadLetterTopic:     d.string(topicNameLimit),
		Parent:              d.string(topicNameLimit),
		FanoutDelayMs:       d.varint(),
		ExpectedOwner:       d.string(nodeIDLimit),
	}
}

// alterTopic writes each optional field as a presence flag and, when
// present, its value: a nil field stays nil, a pointer to 0 stays a
// pointer to 0.
func (e *encoder) alterTopic(r msg.AlterTopic) {
	e.string(r.Name, topicNameLimit)
	e.optionalInt(r.Partitions)
	e.optionalInt64(r.RetentionMs)
	e.optionalInt64(r.VisibilityTimeoutMs)
	e.optionalInt(r.InFlightMax)
	e.optionalInt(r.AckedAheadMax)
	e.bytes(r.Schema, schemaLimit)
	e.optionalInt(r.MaxDeliveries)
	e.optionalString(r.DeadLetterTopic, topicNameLimit)
	e.string(r.ExpectedOwner, nodeIDLimit)
}

func (d *decoder) alterTopic() msg.AlterTopic {
	return msg.AlterTopic{
		Name:                d.string(topicNameLimit),
		Partitions:          d.optionalInt(),
		RetentionMs:         d.optionalInt64(),
		VisibilityTimeoutMs: d.optionalInt64(),
		InFlightMax:         d.optionalInt(),
		AckedAheadMax:       d.optionalInt(),
		Schema:              d.bytes(schemaLimit),
		MaxDeliveries:       d.optionalInt(),
		DeadLetterTopic:     d.optionalString(topicNameLimit),
		ExpectedOwner:       d.string(nodeIDLimit),
	}
}

// produce writes a produce request. It sizes the output first: records
// are the hot path, and one growth beats many.
func (e *encoder) produce(r msg.Produce) {
	e.string(r.Topic, topicNameLimit)
	e.bool(r.Batch)
	e.uvarint(r.FanoutEpoch)
	e.uvarint(r.SchemaID)
	e.uvarint(r.TopicIncarnation)
	e.varint(r.TopicCreatedAtMs)
	e.length(len(r.Records), recordsLimit)
	e.grow(produceRecordsBytes(r.Records))
	for i := range r.Records {
		record := &r.Records[i]
		e.bytes(record.Key, keyLimit)
		e.int(record.Partition)
		e.bytes(record.Payload, payloadLimit)
		e.deadLetterOrigin(record.Origin)
	}
}

// produceRecordFieldsBytesMax bounds the encoding of a record's two length
// prefixes, partition, and dead-letter origin without its topic's bytes.
const produceRecordFieldsBytesMax = 3*binary.MaxVarintLen64 + deadLetterOriginFieldsBytesMax

// produceRecordsBytes is an upper bound of the encoding of records.
func produceRecordsBytes(records []msg.ProduceRecord) int {
	size := len(records) * produceRecordFieldsBytesMax
	for i := range records {
		size += len(records[i].Key) + len(records[i].Payload)
		if records[i].Origin != nil {
			size += len(records[i].Origin.Topic)
		}
	}
	return size
}

func (d *decoder) produce() msg.Produce {
	r := msg.Produce{Topic: d.string(topicNameLimit), Batch: d.bool(), FanoutEpoch: d.uvarint(),
		SchemaID: d.uvarint(), TopicIncarnation: d.uvarint(), TopicCreatedAtMs: d.varint()}
	if n := d.count(recordsLimit, produceRecordBytesMin); n > 0 {
		r.Records = make([]msg.ProduceRecord, n)
	}
	for i := range r.Records {
		r.Records[i] = msg.ProduceRecord{Key: d.bytes(keyLimit), Partition: d.int(), Payload: d.bytes(payloadLimit), Origin: d.deadLetterOrigin()}
	}
	return r
}

func (e *encoder) consume(r msg.Consume) {
	e.string(r.Topic, topicNameLimit)
	e.int(r.Partition)
	e.int(r.Max)
	e.varint(r.WaitMs)
	e.uvarint(r.TopicIncarnation)
	e.varint(r.TopicCreatedAtMs)
}

func (d *decoder) consume() msg.Consume {
	return msg.Consume{Topic: d.string(topicNameLimit), Partition: d.int(), Max: d.int(), WaitMs: d.varint(),
		TopicIncarnation: d.uvarint(), TopicCreatedAtMs: d.varint()}
}

func (e *encoder) ack(r msg.Ack) {
	assert(validAckAction(r.Action), "ack action %d is not one of AckCommit, AckExtend, AckNack, AckReturn", r.Action)
	e.string(r.Topic, topicNameLimit)
	e.uvarint(uint64(r.Action))
	e.bool(r.Batch)
	e.length(len(r.Handles), handlesLimit)
	for _, handle := range r.Handles {
		e.string(handle, receiptHandleLimit)
	}
}

func (d *decoder) ack() msg.Ack {
	r := msg.Ack{Topic: d.string(topicNameLimit), Action: d.ackAction(), Batch: d.bool()}
	if n := d.count(handlesLimit, receiptHandleBytesMin); n > 0 {
		r.Handles = make([]string, n)
	}
	for i := range r.Handles {
		r.Handles[i] = d.string(receiptHandleLimit)
	}
	return r
}

// ackAction reads an ack action, which must be one msg defines.
func (d *decoder) ackAction() msg.AckAction {
	v := d.uvarint()
	if v > uint64(msg.AckReturn) {
		d.malformed("ack action %d is not one of AckCommit, AckExtend, AckNack, AckReturn", v)
		return 0
	}
	return msg.AckAction(v)
}

func validAckAction(a msg.AckAction) bool { return a >= msg.AckCommit && a <= msg.AckReturn }
