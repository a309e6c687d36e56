package meta

import (
	"errors"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"narad/invariant"
)

// raftNode is raft's RawNode as Meta uses it, one method for each of
// RawNode's that Meta calls. A driver asks HasReady after every input,
// and raft's builds its hard state anew at each ask (an allocation per
// field); most inputs (a client's request, a tick between raft's ticks)
// change nothing of raft's. So every method that may change raft's state
// marks it, and HasReady asks raft only after one ran. Meta changes
// raft's log (MemoryStorage) only between Ready and Advance, both marked.
type raftNode struct {
	raw *raft.RawNode
	// quiet is set when raft's HasReady last found nothing and no method
	// that may change raft's state ran since.
	quiet bool
}

func newRaftNode(config *raft.Config) (*raftNode, error) {
	raw, err := raft.NewRawNode(config)
	return &raftNode{raw: raw}, err
}

// HasReady is raft's, asked only when something may have changed.
func (r *raftNode) HasReady() bool {
	if r.quiet {
		invariant.Costly(func() error {
			if r.raw.HasReady() {
				return errors.New("meta: raft has a Ready though no call changed it since it had none")
			}
			return nil
		})
		return false
	}
	has := r.raw.HasReady()
	r.quiet = !has
	return has
}

// BasicStatus changes nothing.
func (r *raftNode) BasicStatus() raft.BasicStatus { return r.raw.BasicStatus() }

// Status changes nothing.
func (r *raftNode) Status() raft.Status { return r.raw.Status() }

// The methods that may change raft's state: each marks it first.

func (r *raftNode) Bootstrap(peers []raft.Peer) error { r.quiet = false; return r.raw.Bootstrap(peers) }
func (r *raftNode) Tick()                             { r.quiet = false; r.raw.Tick() }
func (r *raftNode) Campaign() error                   { r.quiet = false; return r.raw.Campaign() }
func (r *raftNode) Step(m *raftpb.Message) error      { r.quiet = false; return r.raw.Step(m) }
func (r *raftNode) Propose(data []byte) error         { r.quiet = false; return r.raw.Propose(data) }
func (r *raftNode) Ready() raft.Ready                 { r.quiet = false; return r.raw.Ready() }
func (r *raftNode) Advance(rd raft.Ready)             { r.quiet = false; r.raw.Advance(rd) }
func (r *raftNode) TransferLeader(to uint64)          { r.quiet = false; r.raw.TransferLeader(to) }
func (r *raftNode) ReportUnreachable(id uint64)       { r.quiet = false; r.raw.ReportUnreachable(id) }
func (r *raftNode) ReadIndex(context []byte)          { r.quiet = false; r.raw.ReadIndex(context) }

func (r *raftNode) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	r.quiet = false
	r.raw.ReportSnapshot(id, status)
}

func (r *raftNode) ProposeConfChange(change raftpb.ConfChangeI) error {
	r.quiet = false
	return r.raw.ProposeConfChange(change)
}

func (r *raftNode) ApplyConfChange(change raftpb.ConfChangeI) *raftpb.ConfState {
	r.quiet = false
	return r.raw.ApplyConfChange(change)
}
