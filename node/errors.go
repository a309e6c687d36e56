package node

import (
	"errors"

	"narad/msg"
	"narad/storage"
)

// storageCause describes a storage failure for a client: its kind only.
// The full error names files on this node's disk (and the operator sees
// it in the log, through the observer); a client error never does.
func storageCause(err error) string {
	var clientError *msg.Error
	switch {
	case errors.As(err, &clientError):
		return clientError.Message
	case errors.Is(err, storage.ErrNoSpace):
		return "no space left on the node's disk"
	case errors.Is(err, storage.ErrIO):
		return "input/output error on the node's disk"
	case errors.Is(err, storage.ErrCorrupt), errors.Is(err, storage.ErrFrameCorrupt):
		return "corrupt data on the node's disk"
	}
	return "storage error"
}

// invalidPartition is the answer to a request naming a partition the
// topic does not have (400), the same from every route.
func invalidPartition(t *topic, index int) error {
	return partitionOutOfRange(t.info.Name, t.info.Partitions, index)
}

// partitionOutOfRange is invalidPartition for a topic of the given count
// (the leader's, when it answers a request held here: topicwait.go).
func partitionOutOfRange(name string, partitions, index int) error {
	return msg.Invalid("invalid partition %d: topic %s has %d partitions", index, name, partitions)
}
