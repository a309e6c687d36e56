package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/msg"
	"narad/node"
)

// The fast tests of the soak's parts: they run without processes.

func TestPayloadCarriesItsID(t *testing.T) {
	payload := encodePayload("s1.42", 300)
	assert.Len(t, payload, 300)
	id, err := decodePayload(payload)
	require.NoError(t, err)
	assert.Equal(t, "s1.42", id)

	short := encodePayload("b2.7", 1) // never shorter than the id needs
	id, err = decodePayload(short)
	require.NoError(t, err)
	assert.Equal(t, "b2.7", id)

	for _, foreign := range []string{"", "hello", "soak:", "soak:;x", "soak:no-separator"} {
		_, err := decodePayload([]byte(foreign))
		assert.ErrorIs(t, err, ErrPayload, "payload %q", foreign)
	}
}

// TestLoadFitsTheBrokersBounds checks the relations between the soak's
// sizes and the broker's limits: requests the broker would refuse would
// prove nothing, and the forced-recovery step needs cold partitions
// larger than the CatchUp lag bound (else the copy happens only after the
// freeze and no kill can find it complete).
func TestLoadFitsTheBrokersBounds(t *testing.T) {
	coldPartitionBytes := int64(coldRecords / coldPartitions * coldPayloadBytes)
	assert.Greater(t, coldPartitionBytes, node.DefaultMoveConfig().LagBytes*11/10, "cold partitions must outgrow the lag bound")
	assert.LessOrEqual(t, coldBatchRecords*coldPayloadBytes, msg.ProduceBatchBytesMax)
	assert.LessOrEqual(t, batchRecordsMax*payloadBytesMax, msg.ProduceBatchBytesMax)
	assert.LessOrEqual(t, max(coldBatchRecords, batchRecordsMax), msg.ProduceBatchRecordsMax)
	assert.LessOrEqual(t, max(payloadBytesMax, coldPayloadBytes), msg.MessageBytesMax)
	assert.LessOrEqual(t, consumeBatchMax, msg.ConsumeBatchMax)
	assert.Zero(t, coldRecords%coldBatchRecords, "the cold fill sends whole batches")
	assert.GreaterOrEqual(t, hotPartitions, msg.PartitionsMin)
	assert.GreaterOrEqual(t, coldPartitions, msg.PartitionsMin)
}

func TestOptionsDefaultsAndValidation(t *testing.T) {
	base := Options{Scenario: ScenarioFull, Binary: "narad", Dir: t.TempDir()}
	short, err := base.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, nodesFullDefault, short.Nodes)
	assert.Equal(t, shortMemberDeadAfter, short.MemberDeadAfter, "a short run asks for short timings")
	assert.Equal(t, shortMetaSnapshotEntries, short.MetaSnapshotEntries, "a short run compacts the metadata log early")
	timings, env := timingsFor(short)
	assert.Equal(t, shortMetaSnapshotEntries, timings.metaSnapshotEntries)
	assert.Contains(t, env, fmt.Sprintf("%s=%d", EnvMetaSnapshotEntries, shortMetaSnapshotEntries))

	long := base
	long.Duration, long.Scenario = time.Hour, ScenarioDecommission
	long, err = long.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, nodesDecommissionDefault, long.Nodes)
	assert.Zero(t, long.MemberDeadAfter, "a long run keeps the node defaults unless asked")
	assert.Zero(t, long.MetaSnapshotEntries, "a long run keeps the node's snapshot interval unless asked")

	for name, broken := range map[string]Options{
		"unknown scenario":            {Scenario: "chaos", Binary: "narad", Dir: "d"},
		"too few nodes":               {Scenario: ScenarioFull, Nodes: 2, Binary: "narad", Dir: "d"},
		"decommission needs a spare":  {Scenario: ScenarioDecommission, Nodes: 3, Binary: "narad", Dir: "d"},
		"negative duration":           {Scenario: ScenarioFull, Duration: -time.Second, Binary: "narad", Dir: "d"},
		"no binary":                   {Scenario: ScenarioFull, Dir: "d"},
		"more nodes than the maximum": {Scenario: ScenarioFull, Nodes: nodesMax + 1, Binary: "narad", Dir: "d"},
		"negative snapshot interval":  {Scenario: ScenarioFull, MetaSnapshotEntries: -1, Binary: "narad", Dir: "d"},
	} {
		_, err := broken.withDefaults()
		assert.ErrorIs(t, err, ErrOptions, name)
	}
}

// message builds a consumed or replayed message carrying a soak record.
func message(t *testing.T, id string, partition int, offset int64) client.Message {
	raw, err := json.Marshal(string(encodePayload(id, 40)))
	require.NoError(t, err)
	return client.Message{Topic: hotTopic, Partition: partition, Offset: offset, RawPayload: raw}
}

func TestCompareFindsMissingMisplacedDuplicatesAndForeign(t *testing.T) {
	l, err := newLedger(filepath.Join(t.TempDir(), "ledger.ndjson"), time.Now())
	require.NoError(t, err)
	defer l.close()
	// a, b, c, d answered 202; e sent, never answered; f sent twice.
	l.attempt(hotTopic, []string{"a", "b", "c", "d", "e", "f"})
	l.attempt(hotTopic, []string{"f"})
	require.NoError(t, l.acknowledge(hotTopic, []string{"a", "b", "c", "d", "f"},
		[]client.Placement{{Partition: 0, Offset: 0}, {Partition: 0, Offset: 1}, {Partition: 1, Offset: 0}, {Partition: 1, Offset: 1}, {Partition: 2, Offset: 0}},
		"n1", true))

	stored := newStoredLogs()
	at := func(partition int, offset int64) placement {
		return placement{topic: hotTopic, partition: partition, offset: offset}
	}
	stored.add(at(0, 0), message(t, "a", 0, 0))
	stored.add(at(0, 1), message(t, "b", 0, 1))
	stored.add(at(0, 2), message(t, "b", 0, 2))   // b twice, sent once
	stored.add(at(1, 0), message(t, "e", 1, 0))   // c's offset holds e: c is missing
	stored.add(at(1, 5), message(t, "d", 1, 5))   // d elsewhere than its 202 said
	stored.add(at(2, 0), message(t, "f", 2, 0))   // f once
	stored.add(at(2, 1), message(t, "f", 2, 1))   // f twice, sent twice
	stored.add(at(2, 2), message(t, "zzz", 2, 2)) // never sent
	stored.add(at(2, 3), client.Message{RawPayload: json.RawMessage(`{"not":"ours"}`)})
	stored.unreadableAt(at(2, 4), "410")

	attempted, acknowledged := l.snapshot()
	result := compare(stored, attempted, acknowledged, l)
	assert.Equal(t, 5, result.Acknowledged)
	assert.Equal(t, 4, result.Durable)
	require.Len(t, result.Missing, 1)
	assert.Equal(t, "c", result.Missing[0].entry.ID)
	assert.Equal(t, "e", result.Missing[0].heldBy)
	assert.Equal(t, 1, result.Misplaced, "d")
	assert.Equal(t, 2, result.DuplicatedIDs, "b and f")
	assert.Equal(t, 2, result.DuplicateCopies)
	assert.Equal(t, 1, result.DuplicatedSentOnce, "b")
	assert.Equal(t, 1, result.StoredUnacknowledged, "e")
	assert.Equal(t, 2, result.Foreign, "zzz and the JSON object")
	assert.Len(t, result.Unreadable, 1)
	assert.Equal(t, 9, result.RecordsRead)
}

func TestLedgerDeliveries(t *testing.T) {
	l, err := newLedger(filepath.Join(t.TempDir(), "ledger.ndjson"), time.Now())
	require.NoError(t, err)
	defer l.close()
	l.attempt(hotTopic, []string{"a", "b", "c"})
	require.NoError(t, l.acknowledge(hotTopic, []string{"a", "b"}, []client.Placement{{Partition: 0, Offset: 0}, {Partition: 0, Offset: 1}}, "n1", true))
	assert.Error(t, l.acknowledge(hotTopic, []string{"c"}, nil, "n1", false), "a 202 without placements")
	l.deliver("n2", hotTopic, message(t, "a", 0, 0))
	l.deliver("n3", hotTopic, message(t, "a", 0, 0))
	l.deliver("n3", hotTopic, message(t, "c", 0, 2)) // stored without a 202
	l.deliver("n3", hotTopic, client.Message{RawPayload: json.RawMessage(`"other"`)})
	assert.Equal(t, []string{"b"}, l.undelivered())
	distinct, total, redelivered, unknown := l.deliveryCounts()
	assert.Equal(t, []int{1, 4, 1, 1}, []int{distinct, total, redelivered, unknown})
	first, ok := l.firstDelivery("a")
	require.True(t, ok)
	assert.Equal(t, "n2", first.node)
}

func TestLogSummaryPairsFreezesAndCountsMoves(t *testing.T) {
	lines := []string{
		`{"time":"2026-01-01T00:00:00.000Z","level":"INFO","msg":"proc: process start","node":"n1","start":1}`,
		`{"time":"2026-01-01T00:00:00.000Z","level":"WARN","msg":"node event","kind":"partition-frozen","detail":"topics/soak/p00001 for the move to n2"}`,
		`{"time":"2026-01-01T00:00:00.250Z","level":"WARN","msg":"node event","kind":"partition-moved-away","detail":"topics/soak/p00001 now owned by n2"}`,
		`{"time":"2026-01-01T00:00:01.000Z","level":"WARN","msg":"node event","kind":"partition-frozen","detail":"topics/soak/p00002 for the move to n3"}`,
		`{"time":"2026-01-01T00:00:01.100Z","level":"WARN","msg":"node event","kind":"partition-unfrozen","detail":"topics/soak/p00002: the move to n3 ended without a flip"}`,
		`{"time":"2026-01-01T00:00:02.000Z","level":"WARN","msg":"node event","kind":"partition-frozen","detail":"topics/soak/p00003 for the move to n3"}`,
		`{"time":"2026-01-01T00:00:02.500Z","level":"INFO","msg":"proc: process start","node":"n1","start":2}`,
		`{"time":"2026-01-01T00:00:03.000Z","level":"INFO","msg":"move ended","outcome":"completed","duration_ms":300,"bytes":10}`,
		`{"time":"2026-01-01T00:00:04.000Z","level":"INFO","msg":"move ended","outcome":"force_promoted","duration_ms":90000,"bytes":10}`,
		`{"time":"2026-01-01T00:00:05.000Z","level":"ERROR","msg":"node failed"}`,
		`panic: runtime error: index out of range`,
		`goroutine 1 [running]:`,
	}
	summary := newLogSummary()
	require.NoError(t, summary.add(strings.NewReader(strings.Join(lines, "\n"))))
	assert.Equal(t, []time.Duration{250 * time.Millisecond, 100 * time.Millisecond}, summary.Freezes)
	assert.Equal(t, 1, summary.FreezesCut, "p3 was frozen when its process ended")
	assert.Equal(t, map[string]int{"completed": 1, "force_promoted": 1}, summary.MovesByOutcome)
	assert.Equal(t, []int64{300, 90000}, summary.MoveDurationsMs)
	assert.Equal(t, 3, summary.Events["partition-frozen"])
	assert.Equal(t, 1, summary.Errors)
	assert.Equal(t, []string{"panic: runtime error: index out of range"}, summary.Panics)
}

func TestCopyCompleteNeedsTheWholeStateBeforeTheFreeze(t *testing.T) {
	complete := client.Move{Phase: "handoff", BytesCopied: 10, BytesTotal: 10}
	assert.True(t, copyComplete(complete))
	complete.Phase = "catchup"
	assert.True(t, copyComplete(complete))
	for name, m := range map[string]client.Move{
		"copy behind":       {Phase: "catchup", BytesCopied: 9, BytesTotal: 10},
		"nothing copied":    {Phase: "handoff"},
		"freeze granted":    {Phase: "finalize", BytesCopied: 10, BytesTotal: 10},
		"flip under way":    {Phase: "flip", BytesCopied: 10, BytesTotal: 10},
		"session not begun": {BytesCopied: 0, BytesTotal: 0},
	} {
		assert.False(t, copyComplete(m), name)
	}
}

func TestJudgeFailsWhatTheScenarioForbids(t *testing.T) {
	clean := &Report{Load: LoadCounters{Refused: map[int]int{}}, Audit: AuditResult{Acknowledged: 5, Durable: 5}}
	clean.judge(ScenarioDecommission)
	assert.Empty(t, clean.Failures)

	refused := &Report{Load: LoadCounters{Refused: map[int]int{503: 1}}, Audit: AuditResult{Acknowledged: 5, Durable: 5}}
	refused.judge(ScenarioFull)
	assert.Empty(t, refused.Failures, "the full scenario may refuse produces")
	refused.judge(ScenarioDecommission)
	assert.Len(t, refused.Failures, 1, "a clean decommission may not")

	lost := &Report{Load: LoadCounters{Refused: map[int]int{}}, Audit: AuditResult{Acknowledged: 5, Durable: 4,
		Missing: []MissingRecord{{entry: ledgerEntry{ID: "x"}}}}, Undelivered: []string{"x"}}
	lost.judge(ScenarioFull)
	assert.Len(t, lost.Failures, 2, "a missing record and an undelivered one")
	assert.Contains(t, strings.Join(lost.Lines(), "\n"), "audit: 4 of 5 records durable")
}

func TestFrozenForReadsTheSourceLogSinceTheMoveStarted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n1.log")
	lines := []string{
		`{"time":"2026-01-01T00:00:01.000Z","level":"WARN","msg":"node event","kind":"partition-frozen","detail":"topics/soak-cold/p00002 for the move to n5"}`,
		`{"time":"2026-01-01T00:01:00.000Z","level":"WARN","msg":"node event","kind":"partition-frozen","detail":"topics/soak-cold/p00003 for the move to n4"}`,
	}
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	at := func(text string) int64 {
		parsed, err := time.Parse(time.RFC3339, text)
		require.NoError(t, err)
		return parsed.UnixMilli()
	}
	move := client.Move{Topic: coldTopic, Partition: 3, From: "n1", To: "n4", StartedAtMs: at("2026-01-01T00:00:59Z")}
	assert.True(t, frozenFor(path, move))
	move.To = "n5"
	assert.False(t, frozenFor(path, move), "frozen for another destination")
	move = client.Move{Topic: coldTopic, Partition: 2, From: "n1", To: "n5", StartedAtMs: at("2026-01-01T00:00:30Z")}
	assert.False(t, frozenFor(path, move), "a freeze of an earlier move of the partition")
	assert.True(t, logsMention([]string{path}, "partition-frozen", "topics/soak-cold/p00002 "))
	assert.False(t, logsMention([]string{path, filepath.Join(t.TempDir(), "missing.log")}, "voter-removal-proposed", "n1 "))
}

// A produce to an address where nothing listens counts as finding the
// node down; one that a listening server leaves unanswered until the
// client's time runs out does not.
func TestUnansweredProducesTellANodeDownFromASilentOne(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	downAddr := closed.Addr().String()
	require.NoError(t, closed.Close())
	_, err = client.New("http://"+downAddr, client.WithTimeout(2*time.Second)).
		Produce(context.Background(), "t", []byte("x"), client.ProduceOptions{})
	require.Error(t, err)
	require.True(t, foundNodeDown(err), "connection refused: %v", err)

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, never answered, until the test ends
		}
	}()
	_, err = client.New("http://"+silent.Addr().String(), client.WithTimeout(200*time.Millisecond)).
		Produce(context.Background(), "t", []byte("x"), client.ProduceOptions{})
	require.Error(t, err)
	require.False(t, foundNodeDown(err), "a timeout is not a node down: %v", err)
}
