package meta

// The commands of a move (its start, and the three ways it ends) in their
// canonical form (heartbeats_codec.go): the planner starts moves and
// every node ends them, and every replica decodes each one it applies.

// setTarget reads a SetTarget object.
func (s *canonicalScan) setTarget() (cmd SetTarget) {
	s.literal(`{"topic":`)
	cmd.Topic = s.string()
	s.literal(`,"partition":`)
	cmd.Partition = s.intValue()
	s.literal(`,"expected_owner":`)
	cmd.ExpectedOwner = s.string()
	s.literal(`,"target":`)
	cmd.Target = s.string()
	s.literal(`,"now_ms":`)
	cmd.NowMs = s.int()
	if s.skip(`,"moves_max":`) {
		cmd.MovesMax = s.intValue()
	}
	s.literal("}")
	return cmd
}

// moveEnd holds the fields of the commands that end a move, in their
// order; an AbortMove has no ExpectedOwner.
type moveEnd struct {
	Topic               string
	Partition           int
	ExpectedOwner       string
	ExpectedTarget      string
	ExpectedStartedAtMs int64
	ExpectedCreation
}

// completeMove reads a CompleteMove object.
func (s *canonicalScan) completeMove() CompleteMove { return CompleteMove(s.moveEnd(true)) }

// forcePromote reads a ForcePromote object.
func (s *canonicalScan) forcePromote() ForcePromote { return ForcePromote(s.moveEnd(true)) }

// abortMove reads an AbortMove object.
func (s *canonicalScan) abortMove() AbortMove {
	end := s.moveEnd(false)
	return AbortMove{Topic: end.Topic, Partition: end.Partition, ExpectedTarget: end.ExpectedTarget,
		ExpectedStartedAtMs: end.ExpectedStartedAtMs, ExpectedCreation: end.ExpectedCreation}
}

// moveEnd reads the object of a command that ends a move, with its
// expected_owner when withOwner is set.
func (s *canonicalScan) moveEnd(withOwner bool) (end moveEnd) {
	s.literal(`{"topic":`)
	end.Topic = s.string()
	s.literal(`,"partition":`)
	end.Partition = s.intValue()
	if withOwner {
		s.literal(`,"expected_owner":`)
		end.ExpectedOwner = s.string()
	}
	s.literal(`,"expected_target":`)
	end.ExpectedTarget = s.string()
	if s.skip(`,"expected_started_at_ms":`) {
		end.ExpectedStartedAtMs = s.int()
	}
	if s.skip(`,"expected_incarnation":`) {
		end.ExpectedIncarnation = s.uint()
	}
	if s.skip(`,"expected_created_at_ms":`) {
		end.ExpectedCreatedAtMs = s.int()
	}
	s.literal("}")
	return end
}
