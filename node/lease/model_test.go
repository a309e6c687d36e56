package lease_test

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"

	"narad/node/lease"
)

// The model is a deliberately naive lease table: one slice slot per offset
// from 0, scanned linearly on every call. It restates the rules of the
// package documentation without any of the table's structures (no cursor,
// no heaps, no sets), so the state-machine test below can compare every
// result of the real table against it.

type modelState uint8

const (
	modelUndelivered modelState = iota
	modelInFlight
	modelReleased
	modelAcked // acked, skipped, or discarded below the frontier
	// modelExhausted ran out of deliveries (Config.MaxDeliveries) and
	// waits for TakeExhausted; modelDeadLettering was handed out by it.
	modelExhausted
	modelDeadLettering
)

type modelOffset struct {
	state modelState
	// count is the deliveries that reached a consumer, the current
	// reservation included while it is in flight: a Return takes its
	// delivery back (to 0 after a first delivery returned).
	count      uint32
	nonce      uint64
	deadlineMs int64
}

type model struct {
	cfg       lease.Config
	committed uint64
	offsets   []modelOffset // index = offset; offsets past the end are undelivered
	lastNonce uint64
	lastNowMs int64
	lapsed    int
}

func newModel(committed, nonceBase uint64, cfg lease.Config) *model {
	m := &model{cfg: cfg, committed: committed, lastNonce: nonceBase, lastNowMs: math.MinInt64}
	m.grow(committed)
	for offset := range committed {
		m.offsets[offset].state = modelAcked
	}
	return m
}

// grow makes offsets below size addressable.
func (m *model) grow(size uint64) {
	for uint64(len(m.offsets)) < size {
		m.offsets = append(m.offsets, modelOffset{})
	}
}

func (m *model) at(offset uint64) *modelOffset {
	m.grow(offset + 1)
	return &m.offsets[offset]
}

func (m *model) observe(nowMs int64) {
	m.lastNowMs = max(m.lastNowMs, nowMs)
	for i := range m.offsets {
		if m.offsets[i].state == modelInFlight && m.offsets[i].deadlineMs <= m.lastNowMs {
			m.offsets[i].state = m.unacked(m.offsets[i].count)
			m.lapsed++
		}
	}
}

// unacked is the state a delivery that ended without an ack leaves: its
// record exhausted at MaxDeliveries deliveries, else released.
func (m *model) unacked(count uint32) modelState {
	if m.cfg.MaxDeliveries > 0 && int(count) >= m.cfg.MaxDeliveries {
		return modelExhausted
	}
	return modelReleased
}

func (m *model) takeExhausted(nowMs int64, limit int) []lease.Exhausted {
	m.observe(nowMs)
	var out []lease.Exhausted
	for offset := range m.offsets {
		if len(out) < limit && m.offsets[offset].state == modelExhausted {
			m.offsets[offset].state = modelDeadLettering
			out = append(out, lease.Exhausted{Offset: uint64(offset), DeliveryCount: m.offsets[offset].count})
		}
	}
	return out
}

func (m *model) settleDeadLetter(offset uint64, copied bool) bool {
	if offset >= uint64(len(m.offsets)) || m.offsets[offset].state != modelDeadLettering {
		return false
	}
	if copied {
		m.offsets[offset].state = modelAcked
		m.collapse()
		return true
	}
	m.offsets[offset].state = modelReleased
	m.lapsed++
	return true
}

// setConfig changes the caps; exhausted records that no longer exhaust
// go back to the queue.
func (m *model) setConfig(cfg lease.Config) {
	m.cfg = cfg
	for i := range m.offsets {
		if m.offsets[i].state == modelExhausted && m.unacked(m.offsets[i].count) == modelReleased {
			m.offsets[i].state = modelReleased
			m.lapsed++
		}
	}
}

func (m *model) count(state modelState, from uint64) int {
	n := 0
	for offset := from; offset < uint64(len(m.offsets)); offset++ {
		if m.offsets[offset].state == state {
			n++
		}
	}
	return n
}

func (m *model) inFlight() int   { return m.count(modelInFlight, 0) }
func (m *model) ackedAhead() int { return m.count(modelAcked, m.committed) }

func (m *model) reserve(nowMs int64, hwm uint64, visibilityMs int64) (lease.Reservation, bool) {
	m.observe(nowMs)
	if m.inFlight()+m.count(modelExhausted, 0)+m.count(modelDeadLettering, 0) >= m.cfg.InFlightMax {
		return lease.Reservation{}, false
	}
	for offset := m.committed; offset < hwm; offset++ {
		slot := m.at(offset)
		if slot.state != modelUndelivered && slot.state != modelReleased {
			continue
		}
		if m.ackedAhead() >= m.cfg.AckedAheadMax && offset != m.committed {
			return lease.Reservation{}, false
		}
		m.lastNonce++
		if m.lastNonce == 0 {
			m.lastNonce = 1
		}
		*slot = modelOffset{state: modelInFlight, count: slot.count + 1, nonce: m.lastNonce, deadlineMs: saturatedSum(m.lastNowMs, visibilityMs)}
		return lease.Reservation{Offset: offset, Nonce: slot.nonce, DeliveryCount: slot.count, DeadlineMs: slot.deadlineMs}, true
	}
	return lease.Reservation{}, false
}

func saturatedSum(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (m *model) live(offset, nonce uint64, nowMs int64) (*modelOffset, error) {
	m.observe(nowMs)
	if offset >= uint64(len(m.offsets)) || m.offsets[offset].state != modelInFlight || m.offsets[offset].nonce != nonce {
		return nil, lease.ErrStale
	}
	return &m.offsets[offset], nil
}

func (m *model) ack(offset, nonce uint64, nowMs int64) error {
	if offset < m.committed || (offset < uint64(len(m.offsets)) && m.offsets[offset].state == modelAcked) {
		m.observe(nowMs)
		return lease.ErrAcked
	}
	slot, err := m.live(offset, nonce, nowMs)
	if err != nil {
		return err
	}
	if offset != m.committed && m.ackedAhead() >= m.cfg.AckedAheadMax {
		return lease.ErrAckedAheadFull
	}
	slot.state = modelAcked
	m.collapse()
	return nil
}

func (m *model) collapse() {
	for m.committed < uint64(len(m.offsets)) && m.offsets[m.committed].state == modelAcked {
		m.committed++
	}
}

func (m *model) extend(offset, nonce uint64, nowMs, visibilityMs int64) (int64, error) {
	slot, err := m.live(offset, nonce, nowMs)
	if err != nil {
		return 0, err
	}
	slot.deadlineMs = saturatedSum(m.lastNowMs, visibilityMs)
	return slot.deadlineMs, nil
}

func (m *model) nack(offset, nonce uint64, nowMs int64) error {
	slot, err := m.live(offset, nonce, nowMs)
	if err != nil {
		return err
	}
	slot.state = m.unacked(slot.count)
	return nil
}

// returnUnseen is Return: a live reservation goes back for redelivery
// with its delivery taken back; it never exhausts its record.
func (m *model) returnUnseen(offset, nonce uint64, nowMs int64) error {
	slot, err := m.live(offset, nonce, nowMs)
	if err != nil {
		return err
	}
	slot.state = modelReleased
	slot.count--
	return nil
}

func (m *model) reserveReleased(nowMs int64, hwm uint64, visibilityMs int64) (lease.Reservation, bool) {
	m.observe(nowMs)
	if m.count(modelReleased, 0) == 0 {
		return lease.Reservation{}, false
	}
	return m.reserve(nowMs, hwm, visibilityMs)
}

// deliverable is reserve's answer without its expiry and its change.
func (m *model) deliverable(hwm uint64) bool {
	if m.inFlight()+m.count(modelExhausted, 0)+m.count(modelDeadLettering, 0) >= m.cfg.InFlightMax {
		return false
	}
	for offset := m.committed; offset < hwm; offset++ {
		if offset < uint64(len(m.offsets)) && m.offsets[offset].state != modelUndelivered && m.offsets[offset].state != modelReleased {
			continue
		}
		return m.ackedAhead() < m.cfg.AckedAheadMax || offset == m.committed
	}
	return false
}

func (m *model) returnExhausted(offset uint64) bool {
	if offset >= uint64(len(m.offsets)) || m.offsets[offset].state != modelDeadLettering {
		return false
	}
	m.offsets[offset].state = m.unacked(m.offsets[offset].count)
	if m.offsets[offset].state == modelReleased {
		m.lapsed++
	}
	return true
}

func (m *model) expire(nowMs int64) int {
	m.observe(nowMs)
	lapsed := m.lapsed
	m.lapsed = 0
	return lapsed
}

func (m *model) nextDeadline() (int64, bool) {
	deadline, found := int64(math.MaxInt64), false
	for _, slot := range m.offsets {
		if slot.state == modelInFlight {
			deadline, found = min(deadline, slot.deadlineMs), true
		}
	}
	if !found {
		return 0, false
	}
	return deadline, true
}

func (m *model) skip(offset uint64) {
	if offset < m.committed || m.at(offset).state == modelAcked {
		return
	}
	m.at(offset).state = modelAcked
	m.collapse()
}

func (m *model) advanceTo(oldest uint64) uint64 {
	var dropped uint64
	for offset := m.committed; offset < oldest; offset++ {
		if m.at(offset).state != modelAcked {
			dropped++
		}
		m.at(offset).state = modelAcked
	}
	m.committed = max(m.committed, oldest)
	m.collapse()
	return dropped
}

func (m *model) snapshot() lease.Snapshot {
	next := m.committed
	for next < uint64(len(m.offsets)) && m.offsets[next].state != modelUndelivered {
		next++
	}
	snapshot := lease.Snapshot{Committed: m.committed, NextUndelivered: next}
	states := map[modelState]lease.EntryState{modelInFlight: lease.EntryInFlight, modelReleased: lease.EntryReleased, modelAcked: lease.EntryAcked,
		modelExhausted: lease.EntryReleased, modelDeadLettering: lease.EntryReleased}
	for offset := m.committed; offset < uint64(len(m.offsets)); offset++ {
		slot := m.offsets[offset]
		if slot.state == modelUndelivered {
			continue
		}
		entry := lease.SnapshotEntry{Offset: offset, State: states[slot.state], DeliveryCount: max(slot.count, 1)}
		if slot.state == modelAcked {
			entry.DeliveryCount = 0
		}
		entry.ReturnedUnseen = slot.state == modelReleased && slot.count == 0
		snapshot.Entries = append(snapshot.Entries, entry)
	}
	return snapshot
}

// restore is what a move does: in-flight offsets become released (or
// exhausted) and are reported by the next Expire; every delivered offset
// that ran out of deliveries is exhausted again; nonces restart from the
// new base.
func (m *model) restore(nonceBase uint64) {
	m.lapsed = 0
	for i := range m.offsets {
		switch m.offsets[i].state {
		case modelInFlight:
			m.lapsed++
			m.offsets[i].state = m.unacked(m.offsets[i].count)
		case modelReleased, modelExhausted, modelDeadLettering:
			m.offsets[i].state = m.unacked(m.offsets[i].count)
		}
	}
	m.lastNonce = nonceBase
}

// machine drives the real table and the model with the same actions.
type machine struct {
	table   *lease.Table
	model   *model
	nowMs   int64
	hwm     uint64
	handles []lease.Reservation // every reservation handed out, live or not
	// taken lists every offset TakeExhausted handed out, settled or not.
	taken []uint64
	// tally is where table counts its Held; dropped holds the tables
	// restores replaced, which left it, and still change.
	tally   *lease.Tally
	dropped []*lease.Table
}

func smallConfig(t *rapid.T, label string) lease.Config {
	return lease.Config{
		InFlightMax:   rapid.IntRange(1, 6).Draw(t, label+" in-flight max"),
		AckedAheadMax: rapid.IntRange(1, 6).Draw(t, label+" acked-ahead max"),
		MaxDeliveries: rapid.IntRange(0, 3).Draw(t, label+" max deliveries"),
	}
}

func newMachine(t *rapid.T) *machine {
	committed := rapid.Uint64Range(0, 5).Draw(t, "committed")
	nonceBase := rapid.SampledFrom([]uint64{0, 1000, math.MaxUint64 - 2}).Draw(t, "nonce base")
	cfg := smallConfig(t, "initial")
	m := &machine{
		table: lease.New(committed, nonceBase, cfg),
		model: newModel(committed, nonceBase, cfg),
		nowMs: rapid.Int64Range(-100, 100).Draw(t, "start ms"),
		hwm:   committed + rapid.Uint64Range(0, 4).Draw(t, "start hwm"),
		tally: &lease.Tally{},
	}
	m.table.CountInto(m.tally)
	return m
}

// pickHandle returns a handle handed out before, or a made-up one.
func (m *machine) pickHandle(t *rapid.T) (offset, nonce uint64) {
	index := rapid.IntRange(0, len(m.handles)).Draw(t, "handle")
	if index < len(m.handles) {
		return m.handles[index].Offset, m.handles[index].Nonce
	}
	return rapid.Uint64Range(0, m.hwm+2).Draw(t, "made-up offset"), rapid.Uint64Range(0, 2000).Draw(t, "made-up nonce")
}

func (m *machine) Reserve(t *rapid.T) {
	m.reserveLike(t, "reserve", m.table.Reserve, m.model.reserve)
}

// reserveLike draws a high-watermark and a visibility, reserves with the
// table's and the model's reserve, and requires them to agree.
func (m *machine) reserveLike(t *rapid.T, name string, table, model func(nowMs int64, hwm uint64, visibilityMs int64) (lease.Reservation, bool)) {
	hwm := m.hwm - rapid.Uint64Range(0, min(m.hwm, 2)).Draw(t, "hwm lag")
	visibilityMs := rapid.Int64Range(1, 50).Draw(t, "visibility ms")
	got, gotOK := table(m.nowMs, hwm, visibilityMs)
	want, wantOK := model(m.nowMs, hwm, visibilityMs)
	if got != want || gotOK != wantOK {
		t.Fatalf("%s(now %d, hwm %d): got %+v %v, want %+v %v", name, m.nowMs, hwm, got, gotOK, want, wantOK)
	}
	if gotOK {
		m.handles = append(m.handles, got)
	}
}

func (m *machine) Ack(t *rapid.T) {
	offset, nonce := m.pickHandle(t)
	sameError(t, "ack", m.table.Ack(offset, nonce, m.nowMs), m.model.ack(offset, nonce, m.nowMs))
}

func (m *machine) Extend(t *rapid.T) {
	offset, nonce := m.pickHandle(t)
	visibilityMs := rapid.Int64Range(1, 50).Draw(t, "visibility ms")
	got, gotErr := m.table.Extend(offset, nonce, m.nowMs, visibilityMs)
	want, wantErr := m.model.extend(offset, nonce, m.nowMs, visibilityMs)
	sameError(t, "extend", gotErr, wantErr)
	if got != want {
		t.Fatalf("extend(%d, %d): deadline %d, want %d", offset, nonce, got, want)
	}
}

func (m *machine) Nack(t *rapid.T) {
	offset, nonce := m.pickHandle(t)
	sameError(t, "nack", m.table.Nack(offset, nonce, m.nowMs), m.model.nack(offset, nonce, m.nowMs))
}

func (m *machine) Return(t *rapid.T) {
	offset, nonce := m.pickHandle(t)
	sameError(t, "return", m.table.Return(offset, nonce, m.nowMs), m.model.returnUnseen(offset, nonce, m.nowMs))
}

func (m *machine) ReserveReleased(t *rapid.T) {
	m.reserveLike(t, "reserve released", m.table.ReserveReleased, m.model.reserveReleased)
}

func (m *machine) Deliverable(t *rapid.T) {
	hwm := m.hwm - rapid.Uint64Range(0, min(m.hwm, 2)).Draw(t, "hwm lag")
	if got, want := m.table.Deliverable(hwm), m.model.deliverable(hwm); got != want {
		t.Fatalf("deliverable(hwm %d) = %v, want %v", hwm, got, want)
	}
}

func (m *machine) ReturnExhausted(t *rapid.T) {
	offset := rapid.Uint64Range(0, m.hwm+1).Draw(t, "made-up returned dead letter")
	if index := rapid.IntRange(0, len(m.taken)).Draw(t, "returned dead letter"); index < len(m.taken) {
		offset = m.taken[index]
	}
	if got, want := m.table.ReturnExhausted(offset), m.model.returnExhausted(offset); got != want {
		t.Fatalf("return exhausted %d: %v, want %v", offset, got, want)
	}
}

func (m *machine) Expire(t *rapid.T) {
	if got, want := m.table.Expire(m.nowMs), m.model.expire(m.nowMs); got != want {
		t.Fatalf("expire(%d) = %d, want %d", m.nowMs, got, want)
	}
}

func (m *machine) AdvanceTime(t *rapid.T) {
	m.nowMs += rapid.Int64Range(0, 60).Draw(t, "elapsed ms")
}

func (m *machine) GrowHighWatermark(t *rapid.T) {
	m.hwm += rapid.Uint64Range(1, 4).Draw(t, "new records")
}

func (m *machine) Skip(t *rapid.T) {
	offset := rapid.Uint64Range(0, m.hwm+4).Draw(t, "skipped offset")
	m.table.Skip(offset)
	m.model.skip(offset)
}

func (m *machine) AdvanceTo(t *rapid.T) {
	oldest := rapid.Uint64Range(0, m.hwm).Draw(t, "oldest retained")
	if got, want := m.table.AdvanceTo(oldest), m.model.advanceTo(oldest); got != want {
		t.Fatalf("advance to %d dropped %d, want %d", oldest, got, want)
	}
}

func (m *machine) SetConfig(t *rapid.T) {
	cfg := smallConfig(t, "altered")
	m.table.SetConfig(cfg)
	m.model.setConfig(cfg)
}

func (m *machine) TakeExhausted(t *rapid.T) {
	limit := rapid.IntRange(1, 3).Draw(t, "take limit")
	got, want := m.table.TakeExhausted(m.nowMs, limit), m.model.takeExhausted(m.nowMs, limit)
	if len(got) != len(want) {
		t.Fatalf("take exhausted(%d): %+v, want %+v", limit, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("take exhausted(%d): %+v, want %+v", limit, got, want)
		}
		m.taken = append(m.taken, got[i].Offset)
	}
}

func (m *machine) SettleDeadLetter(t *rapid.T) {
	offset := rapid.Uint64Range(0, m.hwm+1).Draw(t, "made-up dead letter")
	if index := rapid.IntRange(0, len(m.taken)).Draw(t, "dead letter"); index < len(m.taken) {
		offset = m.taken[index]
	}
	copied := rapid.Bool().Draw(t, "copy durable")
	settle := m.table.DeadLetterFailed
	if copied {
		settle = m.table.DeadLettered
	}
	got := settle(offset)
	if want := m.model.settleDeadLetter(offset, copied); got != want {
		t.Fatalf("settle dead letter %d (copied %v): %v, want %v", offset, copied, got, want)
	}
}

func (m *machine) SnapshotAndRestore(t *rapid.T) {
	got, want := m.table.Snapshot(), m.model.snapshot()
	if err := got.Validate(); err != nil {
		t.Fatalf("snapshot does not validate: %v", err)
	}
	if !equalSnapshots(got, want) {
		t.Fatalf("snapshot %+v, want %+v", got, want)
	}
	nonceBase := rapid.Uint64Range(0, 3000).Draw(t, "restored nonce base")
	m.table.CountInto(nil)
	m.dropped = append(m.dropped, m.table)
	m.table = lease.RestoreTable(got, nonceBase, m.model.cfg)
	m.table.CountInto(m.tally)
	m.model.restore(nonceBase)
}

// ChangeADroppedTable acks or skips in a table a restore replaced, as a
// node's dead-letter batch may settle a record in a table the node has
// dropped since: the tally it left does not move.
func (m *machine) ChangeADroppedTable(t *rapid.T) {
	if len(m.dropped) == 0 {
		t.Skip("no table dropped")
	}
	table := rapid.SampledFrom(m.dropped).Draw(t, "dropped table")
	table.Skip(table.Committed() + rapid.Uint64Range(0, 3).Draw(t, "skipped past the frontier"))
}

func equalSnapshots(a, b lease.Snapshot) bool {
	if a.Committed != b.Committed || a.NextUndelivered != b.NextUndelivered || len(a.Entries) != len(b.Entries) {
		return false
	}
	for i := range a.Entries {
		if a.Entries[i] != b.Entries[i] {
			return false
		}
	}
	return true
}

// Check runs after every action: the table's own invariants, then every
// observable value against the model.
func (m *machine) Check(t *rapid.T) {
	if err := m.table.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if got, want := m.tally.Held(), m.table.Held(); got != want {
		t.Fatalf("the tally counts %d held, the table holds %d", got, want)
	}
	if got, want := m.table.Committed(), m.model.committed; got != want {
		t.Fatalf("committed %d, want %d", got, want)
	}
	if got, want := m.table.InFlight(), m.model.inFlight(); got != want {
		t.Fatalf("in flight %d, want %d", got, want)
	}
	if got, want := m.table.AckedAhead(), m.model.ackedAhead(); got != want {
		t.Fatalf("acked ahead %d, want %d", got, want)
	}
	if got, want := m.table.ExhaustedPending(), m.model.count(modelExhausted, 0); got != want {
		t.Fatalf("exhausted pending %d, want %d", got, want)
	}
	gotDeadline, gotOK := m.table.NextDeadline()
	wantDeadline, wantOK := m.model.nextDeadline()
	if gotDeadline != wantDeadline || gotOK != wantOK {
		t.Fatalf("next deadline %d %v, want %d %v", gotDeadline, gotOK, wantDeadline, wantOK)
	}
}

func sameError(t *rapid.T, operation string, got, want error) {
	if (got == nil) != (want == nil) || (want != nil && !errors.Is(got, want)) {
		t.Fatalf("%s: error %v, want %v", operation, got, want)
	}
}

// TestTableMatchesModel runs random sequences of reserve, ack, extend,
// nack, expire, advance-time, grow-HWM, skip, retention, config change and
// snapshot-restore against the table and the naive model, comparing every
// result and checking the table's invariants after each step.
func TestTableMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}
