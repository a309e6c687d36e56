package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// membersReply is a GET /v1/cluster/members answer with n3 in the given
// state beside an alive n1.
func membersReply(owned, outbound int, status string, draining, voter bool) reply {
	return reply{200, fmt.Sprintf(`{"members":[
	  {"id":"n1","addr":"10.0.0.1:7943","status":"alive","voter":true,"owned_partitions":9},
	  {"id":"n3","addr":"10.0.0.3:7943","status":%q,"draining":%t,"voter":%t,"owned_partitions":%d,"outbound_moves":%d}]}`,
		status, draining, voter, owned, outbound)}
}

// votersReply is a GET /v1/cluster/members answer with n3 drained,
// draining and voter as given, beside others-many alive voters.
func votersReply(others int, voter bool) reply {
	members := ""
	for i := range others {
		members += fmt.Sprintf(`{"id":"v%d","status":"alive","voter":true,"owned_partitions":4},`, i)
	}
	return reply{200, fmt.Sprintf(`{"members":[%s{"id":"n3","status":"alive","draining":true,"voter":%t,"owned_partitions":0}]}`, members, voter)}
}

func drainHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.app.drainPollEvery = time.Millisecond
	return h
}

func TestDecommissionWaitFollowsTheDrainToTheEnd(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members",
			membersReply(3, 1, "alive", true, true),
			membersReply(3, 1, "alive", true, true),
			reply{503, `{"error":"no metastore leader"}`},
			membersReply(1, 1, "alive", true, true),
			membersReply(0, 0, "alive", true, false))
	h.againstOK(broker, "cluster", "decommission", "n3", "--wait")
	lines := strings.Split(strings.TrimSpace(h.stderr.String()), "\n")
	require.Len(t, lines, 5, h.stderr.String())
	assert.Contains(t, lines[0], "n3 is draining; waiting")
	assert.Contains(t, lines[1], "n3: 3 partition(s) left, 1 moving out")
	assert.Contains(t, lines[2], "reading the members failed: http 503: no metastore leader (retrying)")
	assert.Contains(t, lines[3], "n3: 1 partition(s) left, 1 moving out")
	assert.Contains(t, lines[4], "n3 drained in")
	assert.Contains(t, lines[4], "is not a voter: stop its process")
	assert.Contains(t, lines[4], "clients still sending to n3 are served (forwarded to the owners) only for cluster.dead_after_ms "+
		"(NARAD_CLUSTER_DEAD_AFTER_MS, 30s by default) after its removal, then refused 503", "the window in which its clients must move")
	assert.Len(t, broker.seen("GET /v1/cluster/members"), 5)
}

// A drained voter of a three-voter cluster stays one: the wait says so
// at once (it would wait in vain), and a retried decommission says so
// too, not that the node is draining.
func TestDecommissionWaitSaysWhenTheNodeStaysAVoter(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", votersReply(2, true))
	assert.Equal(t, exitError, h.against(broker, "cluster", "decommission", "n3", "--wait"), "not a success: the node must not be stopped")
	assert.Contains(t, h.stderr.String(), "n3 drained in 0s: it owns no partition and stays a voter, since the cluster has 3 voters and keeps at least 3: keep it running")
	assert.Len(t, broker.seen("GET /v1/cluster/members"), 1, "no poll past the one that saw the drain")

	h = drainHarness(t)
	h.againstOK(broker, "cluster", "decommission", "n3")
	assert.Contains(t, h.stderr.String(), "n3 is drained and stays a voter, since the cluster has 3 voters and keeps at least 3: keep it running")
	assert.NotContains(t, h.stderr.String(), "follow it with --wait")
}

// With more voters than the floor, the wait goes on past the drain until
// the leader took the node out of the voters, and only then says to stop
// it (grow/drain audit: it ended at the drain, a second before the
// removal, and never printed the stop line the docs promise).
func TestDecommissionWaitFollowsTheNodeOutOfTheVoters(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", votersReply(4, true), votersReply(4, true), votersReply(4, true), votersReply(4, false))
	h.againstOK(broker, "cluster", "decommission", "n3", "--wait")
	assert.Contains(t, h.stderr.String(), "n3 drained in 0s: it owns no partition; waiting for the leader to take it out of the voters")
	assert.Contains(t, h.stderr.String(), "is not a voter: stop its process")
	assert.Equal(t, 1, strings.Count(h.stderr.String(), "waiting for the leader"), "said once")
}

// A drained voter the leader keeps (too few live voters would be left) does
// not hold the wait forever: it ends after voterRemovalPolls polls,
// saying why.
func TestDecommissionWaitGivesUpOnAVoterTheLeaderKeeps(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", votersReply(4, true))
	assert.Equal(t, exitError, h.against(broker, "cluster", "decommission", "n3", "--wait"), "not a success: the node must not be stopped")
	assert.Contains(t, h.stderr.String(), "n3 drained, but is still a voter after")
	assert.Contains(t, h.stderr.String(), "too few live voters")
	assert.Len(t, broker.seen("GET /v1/cluster/members"), 1+voterRemovalPolls, "the poll that saw the drain, then those given to the leader")
}

func TestDecommissionWaitNamesADeadMember(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", membersReply(2, 0, "dead", true, true), membersReply(0, 0, "alive", true, false))
	h.againstOK(broker, "cluster", "decommission", "n3", "--wait")
	assert.Contains(t, h.stderr.String(), "n3: 2 partition(s) left, 0 moving out (0s); it is dead: its partitions wait for it to come back")
}

// While every other member that could take the partitions is short of
// disk, the wait says why nothing moves.
func TestDecommissionWaitSaysWhenNoOtherMemberHasRoom(t *testing.T) {
	h := drainHarness(t)
	short := reply{200, `{"members":[
	  {"id":"n1","addr":"10.0.0.1:7943","status":"alive","voter":true,"disk_low":true,"owned_partitions":9},
	  {"id":"n2","addr":"10.0.0.2:7943","status":"dead","voter":true,"owned_partitions":0},
	  {"id":"n3","addr":"10.0.0.3:7943","status":"alive","draining":true,"voter":true,"owned_partitions":2}]}`}
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", short, membersReply(0, 0, "alive", true, false))
	h.againstOK(broker, "cluster", "decommission", "n3", "--wait")
	assert.Contains(t, h.stderr.String(), "n3: 2 partition(s) left, 0 moving out (0s); every other member is short of disk (disk_low): the moves wait for room")
	assert.NotContains(t, strings.SplitN(h.stderr.String(), "\n", 3)[2], "short of disk", "said only while it is so")
}

func TestDecommissionWaitEndsWhenTheDrainIsCancelled(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", membersReply(2, 1, "alive", true, true), membersReply(2, 0, "alive", false, true))
	assert.Equal(t, exitError, h.against(broker, "cluster", "decommission", "n3", "--wait"))
	assert.Contains(t, h.stderr.String(), "narad: n3: the decommission was cancelled")
}

func TestDecommissionWaitTimesOut(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", membersReply(2, 1, "alive", true, true))
	assert.Equal(t, exitError, h.against(broker, "cluster", "decommission", "n3", "--wait", "--timeout", "30ms"))
	assert.Contains(t, h.stderr.String(), "timed out with 2 partition(s) left on n3 and 1 moving out: the drain goes on")
	assert.Equal(t, 1, strings.Count(h.stderr.String(), "n3: 2 partition(s) left"), "an unchanged state is printed once per progress interval")
}

func TestDecommissionWaitEndsWhenTheMemberIsGone(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", reply{200, `{"members":[{"id":"n1","status":"alive","voter":true}]}`})
	h.againstOK(broker, "cluster", "decommission", "n3", "--wait")
	assert.Contains(t, h.stderr.String(), "n3 is no longer a member")
}

func TestDecommissionWaitStopsOnAPermanentFailure(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", reply{403, `{"error":"forbidden"}`})
	assert.Equal(t, exitError, h.against(broker, "cluster", "decommission", "n3", "--wait"))
	assert.Contains(t, h.stderr.String(), "narad: http 403: forbidden")
	assert.Len(t, broker.seen("GET /v1/cluster/members"), 1)
}

func TestDecommissionWaitFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--wait", "--cancel"},
		{"--timeout", "1m"},
		{"--wait", "--timeout", "-1s"},
	} {
		h := drainHarness(t)
		broker := newFakeBroker(t)
		assert.Equal(t, exitUsage, h.against(broker, append([]string{"cluster", "decommission", "n3"}, args...)...), args)
		assert.Empty(t, broker.seen(""), "a refused command sends nothing: %v", args)
	}
}

// A first answer from a node that has not applied the decommission yet
// (not draining) is no cancel: the wait goes on until it sees the drain.
func TestDecommissionWaitIsNotFooledByALaggingNode(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", membersReply(2, 0, "alive", false, true), membersReply(2, 1, "alive", true, true),
			membersReply(0, 0, "alive", true, false))
	h.againstOK(broker, "cluster", "decommission", "n3", "--wait")
	assert.Contains(t, h.stderr.String(), "n3 drained in")
	assert.NotContains(t, h.stderr.String(), "cancelled")
}

// A draining member that owns nothing but is the target of a move (from
// a dead owner, which the planner keeps) is not drained: it may still
// end up owning the partition, so stopping it then could lose the only
// copy that can be promoted.
func TestDecommissionWaitWaitsForAMoveIntoTheNode(t *testing.T) {
	h := drainHarness(t)
	inbound := reply{200, `{"members":[
	  {"id":"n1","addr":"10.0.0.1:7943","status":"dead","voter":true,"owned_partitions":9,"outbound_moves":1},
	  {"id":"n3","addr":"10.0.0.3:7943","status":"alive","draining":true,"voter":true,"owned_partitions":0,"outbound_moves":0,"inbound_moves":1}]}`}
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", inbound, membersReply(0, 0, "alive", true, false))
	h.againstOK(broker, "cluster", "decommission", "n3", "--wait")
	assert.Contains(t, h.stderr.String(), "n3: 0 partition(s) left, 0 moving out")
	assert.Contains(t, h.stderr.String(), "1 still moving in (from a dead owner)")
	assert.Contains(t, h.stderr.String(), "n3 drained in")
	assert.Len(t, broker.seen("GET /v1/cluster/members"), 2, "the first answer was not taken as drained")
}

// A decommission retried once the node has left the voters (listed,
// drained, no longer a voter, until the leader forgets it) is no drain
// starting: the command says the decommission is complete.
func TestDecommissionOfANodeThatLeftTheVotersSaysItIsComplete(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", membersReply(0, 0, "alive", true, false))
	h.againstOK(broker, "cluster", "decommission", "n3")
	assert.Contains(t, h.stderr.String(), "n3's decommission is complete: it left the voters; stop its process")
	assert.Contains(t, h.stderr.String(), "after its removal, then refused 503")
	assert.NotContains(t, h.stderr.String(), "is draining")
}

// A node that still owns partitions, or is still a voter, drains.
func TestDecommissionWithoutWaitSaysTheNodeDrains(t *testing.T) {
	for _, members := range []reply{membersReply(2, 1, "alive", true, true), votersReply(4, true)} {
		h := drainHarness(t)
		broker := newFakeBroker(t).on("POST /v1/cluster/members/n3/decommission", reply{204, ""}).
			on("GET /v1/cluster/members", members)
		h.againstOK(broker, "cluster", "decommission", "n3")
		assert.Contains(t, h.stderr.String(), "n3 is draining (follow it with --wait")
	}
}

// A cancel is idempotent (204 whether the member drained or not), and the
// CLI printed "decommission of n1 cancelled" of a node that was not
// draining (external audit finding). It reads the member's draining flag
// first and says which it was; members it cannot read, it claims neither.
func TestDecommissionCancelSaysWhetherADrainWasStopped(t *testing.T) {
	cases := []struct {
		members reply
		want    string
	}{
		{membersReply(2, 1, "alive", true, true), "decommission of n3 cancelled: it drains no more"},
		{membersReply(9, 0, "alive", false, true), "n3 was not draining: there was no decommission to cancel"},
		{reply{403, `{"error":"forbidden"}`}, "n3 is not draining (decommission cancelled, or none was under way)"},
	}
	for _, c := range cases {
		h := drainHarness(t)
		broker := newFakeBroker(t).on("DELETE /v1/cluster/members/n3/decommission", reply{204, ""}).
			on("GET /v1/cluster/members", c.members)
		h.againstOK(broker, "cluster", "decommission", "n3", "--cancel")
		assert.True(t, strings.HasPrefix(h.stderr.String(), c.want), "stderr %q, want %q", h.stderr.String(), c.want)
		assert.Len(t, broker.seen("DELETE /v1/cluster/members/n3/decommission"), 1, "the cancel is sent in every case")
	}
}

// A drain cancelled halfway makes the node a receiver again, and the
// planner at once moves partitions back onto it: the cancel's line and
// the flag's help say so (grow/drain audit: the moves back surprised).
func TestDecommissionCancelSaysPartitionsMoveBack(t *testing.T) {
	h := drainHarness(t)
	broker := newFakeBroker(t).on("DELETE /v1/cluster/members/n3/decommission", reply{204, ""}).
		on("GET /v1/cluster/members", membersReply(2, 1, "alive", true, true))
	h.againstOK(broker, "cluster", "decommission", "n3", "--cancel")
	assert.Contains(t, h.stderr.String(), "the planner now moves partitions back onto it until it holds its share")
	h = newHarness(t)
	h.runOK("cluster", "decommission", "--help")
	assert.Contains(t, h.stdout.String(), "the planner then moves partitions back onto the node to rebalance")
}

// The help says what happens to the clients still sending to a node
// removed: forwarded for cluster.dead_after_ms, refused 503 after that
// (grow/drain audit: neither the help nor the last line said so).
func TestDecommissionHelpNamesTheClientsWindow(t *testing.T) {
	h := newHarness(t)
	h.runOK("cluster", "decommission", "--help")
	help := strings.Join(strings.Fields(h.stdout.String()), " ")
	for _, want := range []string{"cluster.dead_after_ms (NARAD_CLUSTER_DEAD_AFTER_MS, 30s by default)", "refuses them 503",
		"move the clients still sending to it to other nodes within that window"} {
		assert.Contains(t, help, want)
	}
}

// The help says the wait repeats an unchanged line every progressInterval
// (drain audit: it said a line came only when the count changed, and a
// dead source's drain printed the same count every 5 s).
func TestDecommissionHelpSaysAnUnchangedLineRepeats(t *testing.T) {
	require.Equal(t, 5*time.Second, progressInterval, "the help names it as 5 s")
	h := newHarness(t)
	h.runOK("cluster", "decommission", "--help")
	help := strings.Join(strings.Fields(h.stdout.String()), " ")
	assert.Contains(t, help, "whenever that changes (and every 5 s while it does not")
}
