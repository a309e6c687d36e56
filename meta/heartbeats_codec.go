package meta

import "strconv"

// Every replica decodes every round of member heartbeats it applies, the
// commonest entry of a cluster's log, and the start and every end of a
// move (move_codec.go); encoding/json's reflection was most of the cost.
// decodeCanonical reads the envelope of such a command in the one form
// EncodeCommand writes it (keys in declaration order, no white space,
// plain ASCII strings, integers), with exactly encoding/json's result;
// anything else is left to decodeAs.

// decodeCanonicalOr decodes an envelope of a T whose body (the command
// object) body reads in its canonical form, and any other envelope
// strictly with encoding/json (decodeAs).
func decodeCanonicalOr[T Command](envelope []byte, body func(*canonicalScan) T) (ProposalID, Command, error) {
	if id, cmd, ok := decodeCanonical(envelope, body); ok {
		return id, cmd, nil
	}
	return decodeAs[T](envelope)
}

// decodeCanonical decodes an envelope in its canonical form, its command
// object read by body; ok is false for any other input.
func decodeCanonical[T Command](envelope []byte, body func(*canonicalScan) T) (id ProposalID, cmd T, ok bool) {
	s := canonicalScan{rest: envelope, ok: true}
	s.literal(`{"proposal":{"node":`)
	id.Node = s.string()
	s.literal(`,"term":`)
	id.Term = s.uint()
	s.literal(`,"sequence":`)
	id.Sequence = s.uint()
	s.literal(`},"command":`)
	cmd = body(&s)
	s.literal("}")
	if !s.ok || len(s.rest) > 0 {
		var none T
		return ProposalID{}, none, false
	}
	return id, cmd, true
}

// heartbeats reads a MemberHeartbeats object.
func (s *canonicalScan) heartbeats() (cmd MemberHeartbeats) {
	s.literal(`{"beats":`)
	if !s.skip("null") {
		cmd.Beats = []MemberHeartbeat{}
		s.literal("[")
		for s.ok && !s.skip("]") {
			if len(cmd.Beats) > 0 {
				s.literal(",")
			}
			cmd.Beats = append(cmd.Beats, s.beat())
		}
	}
	s.literal("}")
	return cmd
}

// beat reads one MemberHeartbeat object.
func (s *canonicalScan) beat() (beat MemberHeartbeat) {
	s.literal(`{"id":`)
	beat.ID = s.string()
	s.literal(`,"http_addr":`)
	beat.HTTPAddr = s.string()
	s.literal(`,"cluster_addr":`)
	beat.ClusterAddr = s.string()
	s.literal(`,"now_ms":`)
	beat.NowMs = s.int()
	if s.skip(`,"incarnation":`) {
		beat.Incarnation = s.uint()
	}
	if s.skip(`,"disk_low":`) {
		beat.DiskLow = s.skip("true")
		if !beat.DiskLow {
			s.literal("false")
		}
	}
	if s.skip(`,"data_id":`) {
		beat.DataID = s.string()
	}
	s.literal("}")
	return beat
}

// canonicalScan reads canonical JSON from the front of rest; ok turns
// false, for good, at the first byte out of the canonical form.
type canonicalScan struct {
	rest []byte
	ok   bool
}

// skip consumes prefix if rest starts with it, and reports whether it did.
func (s *canonicalScan) skip(prefix string) bool {
	if !s.ok || len(s.rest) < len(prefix) || string(s.rest[:len(prefix)]) != prefix {
		return false
	}
	s.rest = s.rest[len(prefix):]
	return true
}

// literal consumes prefix, which must be there.
func (s *canonicalScan) literal(prefix string) {
	if !s.skip(prefix) {
		s.ok = false
	}
}

// string reads a string of printable ASCII without escapes (encoding/json
// reads those bytes as they are).
func (s *canonicalScan) string() string {
	if !s.ok || len(s.rest) == 0 || s.rest[0] != '"' {
		s.ok = false
		return ""
	}
	for i := 1; i < len(s.rest); i++ {
		switch c := s.rest[i]; {
		case c == '"':
			v := string(s.rest[1:i])
			s.rest = s.rest[i+1:]
			return v
		case c < 0x20 || c > 0x7e || c == '\\':
			s.ok = false
			return ""
		}
	}
	s.ok = false
	return ""
}

// number returns the bytes of an integer as JSON writes it (an optional
// minus, then 0 or a digit string without a leading zero), consumed.
func (s *canonicalScan) number() string {
	end := 0
	if end < len(s.rest) && s.rest[end] == '-' {
		end++
	}
	digits := end
	for end < len(s.rest) && s.rest[end] >= '0' && s.rest[end] <= '9' {
		end++
	}
	if !s.ok || end == digits || (s.rest[digits] == '0' && end > digits+1) ||
		(end < len(s.rest) && (s.rest[end] == '.' || s.rest[end] == 'e' || s.rest[end] == 'E')) {
		s.ok = false
		return ""
	}
	v := string(s.rest[:end])
	s.rest = s.rest[end:]
	return v
}

// uint reads an integer into a uint64 as encoding/json does.
func (s *canonicalScan) uint() uint64 {
	v, err := strconv.ParseUint(s.number(), 10, 64)
	if err != nil {
		s.ok = false
	}
	return v
}

// intValue reads an integer into an int as encoding/json does: one out
// of an int's range is not canonical.
func (s *canonicalScan) intValue() int {
	v := s.int()
	if int64(int(v)) != v {
		s.ok = false
	}
	return int(v)
}

// int reads an integer into an int64 as encoding/json does.
func (s *canonicalScan) int() int64 {
	v, err := strconv.ParseInt(s.number(), 10, 64)
	if err != nil {
		s.ok = false
	}
	return v
}
