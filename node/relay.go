package node

import "narad/msg"

// relays counts the writes this node makes into topics on its own behalf
// (relay), which no client waits for.
type relays struct {
	// inFlight counts the relays started and not yet completed; at most
	// Config.RelaysInFlightMax. bytesInFlight is their key and payload
	// bytes: at most Config.RelayBytesInFlightMax, or one relay's.
	inFlight      int
	bytesInFlight int64
}

// relay writes records into a topic on this node's own behalf, placed and
// routed exactly as a client's produce: records for partitions this node
// owns are appended here and synced with the partition's next round,
// records for other owners are forwarded to them (joined with the
// clients' produce parts to that owner). done is called exactly once,
// from Advance or Step, never from within relay: with the placements once
// every record is durable at its owner, or with the error that stopped
// it (records already written then stay written, as for a client's
// failed produce: the caller may write them again). The write carries no
// client request id, so no reply of it reaches the driver.
//
// fanoutEpoch is the attach epoch of the fan-out link a cursor copies for
// (msg.Produce.FanoutEpoch), 0 for any other write.
//
// A relay is refused (Unavailable, done not called) when
// Config.RelaysInFlightMax relays are in flight, or when its records
// would take the bytes in flight past Config.RelayBytesInFlightMax (one
// relay alone always goes). Schemas are not checked: the caller decides
// what may enter the topic.
func (n *Node) relay(topicName string, fanoutEpoch uint64, records []msg.ProduceRecord, done func(msg.Reply)) error {
	if n.relays.inFlight >= n.cfg.RelaysInFlightMax {
		return msg.Unavailable("this node has %d writes between topics in flight, its limit; retry", n.relays.inFlight)
	}
	bytes := msg.RecordsBytes(records)
	if n.relays.inFlight > 0 && n.relays.bytesInFlight+bytes > n.cfg.RelayBytesInFlightMax {
		return msg.Unavailable("this node has %d bytes of writes between topics in flight, near its limit of %d; retry",
			n.relays.bytesInFlight, n.cfg.RelayBytesInFlightMax)
	}
	n.relays.inFlight++
	n.relays.bytesInFlight += bytes
	finish := func(reply msg.Reply) {
		n.relays.inFlight--
		n.relays.bytesInFlight -= bytes
		n.fanoutWakeNow() // a fan-out cursor may wait for this slot
		done(reply)
	}
	id := internalRequestBit | n.servedID(n.routing.served.Part(finish))
	r := msg.Produce{Topic: topicName, Records: records, Batch: true, FanoutEpoch: fanoutEpoch}
	t, placements, err := n.placeRecords(r, false)
	if err != nil {
		n.reply(id, nil, err) // answered at the next Advance, like the rest
		return nil
	}
	n.writePlaced(id, t, r, placements)
	return nil
}

// RelaysInFlight is how many writes between topics this node has in
// flight (for metrics).
func (n *Node) RelaysInFlight() int { return n.relays.inFlight }
