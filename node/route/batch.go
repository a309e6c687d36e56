package route

import "narad/invariant"

// Batch is one forward that carries several parts bound for one owner,
// gathered while one Ready is built. Only its own methods change it.
type Batch[C any] struct {
	// ID is the forward's id; Index is where its message is among the
	// Ready's messages. Both are set once, by the node.
	ID    uint64
	Index int
	// records and payloadBytes size the batch; Add keeps them within
	// the bounds Fits was asked with.
	records, payloadBytes int
	// parts are the parts carried, in batch order.
	parts []batchPart[C]
}

// batchPart is one part of a batch: its records, the next ones of the
// batch, and its continuation.
type batchPart[C any] struct {
	records      int
	continuation C
}

// Fits reports whether a part of records and payloadBytes may join the
// batch within recordsMax and bytesMax.
func (b *Batch[C]) Fits(records, payloadBytes, recordsMax, bytesMax int) bool {
	return b.records+records <= recordsMax && b.payloadBytes+payloadBytes <= bytesMax
}

// Add appends a part to the batch.
func (b *Batch[C]) Add(records, payloadBytes int, continuation C) {
	invariant.Check(records >= 0 && payloadBytes >= 0, "route: a part of %d records and %d bytes", records, payloadBytes)
	b.records += records
	b.payloadBytes += payloadBytes
	b.parts = append(b.parts, batchPart[C]{records: records, continuation: continuation})
}

// Records is how many records the batch carries.
func (b *Batch[C]) Records() int { return b.records }

// Share is one part's share of the batch's answer: records [From, To).
type Share[C any] struct {
	From, To     int
	Continuation C
}

// Split cuts an answer of answered records into the parts' shares, in
// batch order. An answer of another length cannot be split: ok is false,
// and every part gets the answer as it is.
func (b *Batch[C]) Split(answered int) (shares []Share[C], ok bool) {
	if answered != b.records {
		return nil, false
	}
	start := 0
	for _, part := range b.parts {
		shares = append(shares, Share[C]{From: start, To: start + part.records, Continuation: part.continuation})
		start += part.records
	}
	return shares, true
}

// Continuations returns every part's continuation, in batch order.
func (b *Batch[C]) Continuations() []C {
	out := make([]C, 0, len(b.parts))
	for _, part := range b.parts {
		out = append(out, part.continuation)
	}
	return out
}
