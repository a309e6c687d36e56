package wire

import (
	"fmt"

	"narad/msg"
)

// EncodeEnvelope appends the encoding of env to dst and returns the
// extended slice. The encoding is: the Version byte, From and To, the type
// number of env.Message, and the message's fields.
//
// It returns ErrUnknownType, and dst unchanged, when env.Message, a
// forwarded request or a reply's result is of a type the codec does not
// encode (nil, a pointer, or a type node does not define). It panics when
// a value is over one of the bounds: the sender must validate what it
// sends (see bounds.go).
func EncodeEnvelope(dst []byte, env msg.Envelope) ([]byte, error) {
	start := len(dst)
	e := encoder{buf: dst}
	e.byte(Version)
	e.string(env.From, nodeIDLimit)
	e.string(env.To, nodeIDLimit)
	e.peerMessage(env.Message)
	if e.err != nil {
		return dst[:start], e.err
	}
	frameLimit.assertWithin(len(e.buf)-start, "encoded envelope")
	return e.buf, nil
}

// DecodeEnvelope decodes one envelope encoded by EncodeEnvelope. It is
// strict: the version, every type number, every length and count and every
// flag byte are checked, and the input must end where the envelope does.
// It never panics, and it allocates nothing of a size an input claims
// before checking that claim against its bound and against the bytes
// actually present. The result shares no memory with b.
//
// Decoded values are canonical (see the package documentation for nil and
// empty slices and for errors).
func DecodeEnvelope(b []byte) (msg.Envelope, error) {
	if len(b) > FrameBytesMax {
		return msg.Envelope{}, fmt.Errorf("%w: envelope of %d bytes, over FrameBytesMax = %d", ErrTooLarge, len(b), FrameBytesMax)
	}
	d := decoder{input: b}
	d.version()
	var env msg.Envelope
	env.From, env.To = d.stringPair(nodeIDLimit)
	env.Message = d.peerMessage()
	if err := d.finish(); err != nil {
		return msg.Envelope{}, err
	}
	return env, nil
}

// version reads the version byte.
func (d *decoder) version() {
	if v := d.byte(); d.err == nil && v != Version {
		d.fail(fmt.Errorf("%w: envelope version %d, this codec reads %d", ErrVersion, v, Version))
	}
}

// peerMessage writes the type number and fields of an envelope's message.
func (e *encoder) peerMessage(message msg.PeerMessage) {
	switch m := message.(type) {
	case msg.RaftMessage:
		e.typeNumber(typeRaftMessage)
		e.raftMessage(m.Message)
	case msg.ForwardRequest:
		e.typeNumber(typeForwardRequest)
		e.forwardRequest(m)
	case msg.ForwardReply:
		e.typeNumber(typeForwardReply)
		e.uvarint(m.ID)
		e.reply(&m.Reply)
	case msg.Subscribe:
		e.typeNumber(typeSubscribe)
		e.string(m.Topic, topicNameLimit)
		e.varint(m.ForMs)
	case msg.Notify:
		e.typeNumber(typeNotify)
		e.string(m.Topic, topicNameLimit)
	case msg.Join:
		e.typeNumber(typeJoin)
		e.join(m)
	case msg.JoinRelay:
		e.typeNumber(typeJoinRelay)
		e.string(m.NodeID, nodeIDLimit)
		e.join(m.Join)
	case msg.JoinAccepted:
		e.typeNumber(typeJoinAccepted)
		e.peerAddresses(m.Voters)
	case msg.Heartbeat:
		e.typeNumber(typeHeartbeat)
		e.string(m.HTTPAddr, addressLimit)
		e.string(m.ClusterAddr, addressLimit)
		e.varint(m.NowMs)
		e.uvarint(m.Incarnation)
		e.bool(m.DiskLow)
		e.string(m.DataID, nodeIDLimit)
	case msg.ForwardCancel:
		e.typeNumber(typeForwardCancel)
		e.uvarint(m.ID)
	case msg.Retired:
		e.typeNumber(typeRetired)
	default:
		e.unknown("envelope message", message)
	}
}

// peerMessage reads the type number and fields of an envelope's message.
func (d *decoder) peerMessage() msg.PeerMessage {
	switch t := d.typeNumber(); t {
	case typeRaftMessage:
		return d.raftMessage()
	case typeForwardRequest:
		return d.forwardRequest()
	case typeForwardReply:
		return msg.ForwardReply{ID: d.uvarint(), Reply: d.reply()}
	case typeSubscribe:
		return msg.Subscribe{Topic: d.string(topicNameLimit), ForMs: d.varint()}
	case typeNotify:
		return msg.Notify{Topic: d.string(topicNameLimit)}
	case typeJoin:
		return d.join()
	case typeJoinRelay:
		return msg.JoinRelay{NodeID: d.string(nodeIDLimit), Join: d.join()}
	case typeJoinAccepted:
		return msg.JoinAccepted{Voters: d.peerAddresses()}
	case typeHeartbeat:
		return msg.Heartbeat{HTTPAddr: d.string(addressLimit), ClusterAddr: d.string(addressLimit), NowMs: d.varint(), Incarnation: d.uvarint(), DiskLow: d.bool(),
			DataID: d.string(nodeIDLimit)}
	case typeForwardCancel:
		return msg.ForwardCancel{ID: d.uvarint()}
	case typeRetired:
		return msg.Retired{}
	default:
		d.unknown("envelope message", t)
		return nil
	}
}

func (e *encoder) join(m msg.Join) {
	e.uvarint(m.RaftID)
	e.string(m.ClusterAddr, addressLimit)
	e.string(m.HTTPAddr, addressLimit)
}

func (d *decoder) join() msg.Join {
	return msg.Join{RaftID: d.uvarint(), ClusterAddr: d.string(addressLimit), HTTPAddr: d.string(addressLimit)}
}

// peerAddresses writes a voter list, bounded like a member list.
func (e *encoder) peerAddresses(peers []msg.PeerAddress) {
	e.length(len(peers), membersLimit)
	for _, peer := range peers {
		e.string(peer.ID, nodeIDLimit)
		e.uvarint(peer.RaftID)
		e.string(peer.ClusterAddr, addressLimit)
	}
}

// peerAddresses reads a voter list; never nil.
func (d *decoder) peerAddresses() []msg.PeerAddress {
	peers := make([]msg.PeerAddress, d.count(membersLimit, peerAddressBytesMin))
	for i := range peers {
		peers[i] = msg.PeerAddress{ID: d.string(nodeIDLimit), RaftID: d.uvarint(), ClusterAddr: d.string(addressLimit)}
	}
	return peers
}

// unknown records ErrUnknownType for a type number not valid in place.
func (d *decoder) unknown(place string, t typeNumber) {
	d.fail(fmt.Errorf("%w: %s type number %d", ErrUnknownType, place, t))
}

func (e *encoder) forwardRequest(m msg.ForwardRequest) {
	e.uvarint(m.ID)
	e.bool(m.LocalOnly)
	e.request(m.Request)
}

func (d *decoder) forwardRequest() msg.ForwardRequest {
	return msg.ForwardRequest{ID: d.uvarint(), LocalOnly: d.bool(), Request: d.request()}
}
