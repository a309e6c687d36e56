package node

import "narad/msg"

// checkDeadLetters checks a topic's dead-letter setting against this
// replica before it is proposed (docs/api.md#dead-letters); the metastore
// checks again when it applies (the dead-letter topic may be deleted
// meanwhile).
func (n *Node) checkDeadLetters(info msg.TopicInfo) error {
	switch {
	case info.MaxDeliveries < 0 || info.MaxDeliveries > msg.MaxDeliveriesMax:
		return msg.Invalid("max_deliveries must be between 0 (off) and %d, got %d", msg.MaxDeliveriesMax, info.MaxDeliveries)
	case info.MaxDeliveries > 0 && info.DeadLetterTopic == "":
		return msg.Invalid("max_deliveries needs a dead_letter_topic")
	case info.DeadLetterTopic == "":
		return nil
	case info.DeadLetterTopic == info.Name:
		return msg.Invalid("topic %q cannot be its own dead_letter_topic", info.Name)
	}
	if err := validTopicName(info.DeadLetterTopic); err != nil {
		return msg.Invalid("invalid dead_letter_topic: %v", err)
	}
	if _, ok := n.lookupTopic(info.DeadLetterTopic); !ok {
		return msg.NotFound("dead_letter_topic %q not found", info.DeadLetterTopic)
	}
	return nil // a delay child will be refused here (409): only its parent writes it
}
