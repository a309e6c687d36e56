package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
)

// With grants enforced, a topic's dead letters reach its dead-letter
// topic only while the topic's owner holds produce there: a user whose
// grant was revoked after naming the dead-letter topic went on writing
// into it by producing to its own topic and nacking (security audit).
// Meanwhile the dead letters wait, exhausted, never delivered again; they
// go once the grant is back. A topic without an owner is an admin's.
func TestDeadLettersWaitForTheOwnersProduceGrant(t *testing.T) {
	h := newHarness(t)
	recorder := &eventRecorder{}
	h.observer = recorder
	h.cfg.EnforceGrants = true
	h.restart()
	produceLedger := []meta.Grant{{Action: meta.GrantProduce, Patterns: []string{"ledger", "orders"}}}
	require.NoError(t, h.changeUsers(meta.PutUser{Username: "pat", PasswordHash: []byte("hash"), Grants: produceLedger, CreateOnly: true, NowMs: 5}).Err)
	user, found := h.node.meta.State().User("pat")
	require.True(t, found)
	h.createTopic("ledger")
	h.createTopic("orders", withDeadLetters(1, "ledger"), func(c *msg.CreateTopic) {
		c.CreatedBy, c.CreatorCreatedAtMs = "pat", user.CreatedAtMs
	})
	revoked := []meta.Grant{{Action: meta.GrantProduce, Patterns: []string{"orders"}}}
	require.NoError(t, h.changeUsers(meta.SetGrants{Username: "pat", Grants: revoked, NowMs: 6}).Err)

	h.produce("orders", 0, "forged")
	h.consumeAndNack("orders")
	h.tick(10)
	_, reached := h.consume("ledger")
	require.False(t, reached, "nothing reaches the dead-letter topic without the owner's grant")
	_, again := h.consume("orders")
	require.False(t, again, "the exhausted record is not delivered again")
	require.Contains(t, recorder.events, "dead-letters-unauthorised")

	require.NoError(t, h.changeUsers(meta.SetGrants{Username: "pat", Grants: produceLedger, NowMs: 7}).Err)
	h.tick(10)
	copied, reached := h.consume("ledger")
	require.True(t, reached, "with the grant back, the dead letter goes")
	require.Equal(t, "forged", string(copied.Payload))
	require.Contains(t, recorder.events, "dead-letters-authorised")
}
