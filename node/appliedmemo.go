package node

// appliedMemo keeps one answer derived from the metastore's applied state
// with the applied index it was derived at. Ticks and requests ask such
// answers many times between two applied entries, and only an applied
// entry or snapshot changes the state (each moves the applied index), so
// the answer is derived again only once the index moved. Keyed by the
// index, not reset by advanceMeta: the state changes at Persist, before
// the Advance that follows it.
type appliedMemo[T any] struct {
	// known is set once an answer was kept; at is the applied index it
	// was derived at, value the answer. Only keep changes them.
	known bool
	at    uint64
	value T
}

// lookup returns the kept answer if it was derived at applied.
func (m *appliedMemo[T]) lookup(applied uint64) (T, bool) {
	return m.value, m.known && m.at == applied
}

// keep records value as the answer at applied, and returns it.
func (m *appliedMemo[T]) keep(applied uint64, value T) T {
	*m = appliedMemo[T]{known: true, at: applied, value: value}
	return value
}
