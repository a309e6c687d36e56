package meta

import "strconv"

// A member's record is written again at each of its heartbeats that
// applies, on every replica: encoding/json's reflection was most of the
// cost of writing it. appendMemberJSON writes it byte for byte as
// json.Marshal does when its strings need no escaping, as every node id
// and address does in practice; any other record is left to json.Marshal.

// encodeMember is encodePresent of a member record.
func encodeMember(member *Member) ([]byte, bool) {
	if member == nil {
		return nil, false
	}
	size := memberJSONFixedBytesMax + len(member.ID) + len(member.HTTPAddr) + len(member.ClusterAddr) + len(member.DataID)
	if data, ok := appendMemberJSON(make([]byte, 0, size), member); ok {
		return data, true
	}
	return encodePresent(member)
}

// memberJSONFixedBytesMax bounds what a member's encoding holds besides
// its strings: the keys, the punctuation, two booleans and two integers
// of at most 20 digits.
const memberJSONFixedBytesMax = 200

// appendMemberJSON appends the member as json.Marshal encodes it (its
// fields in order, omitempty ones left out when zero); ok is false when
// one of its strings is not plainJSON.
func appendMemberJSON(b []byte, member *Member) (data []byte, ok bool) {
	if !plainJSON(member.ID) || !plainJSON(member.HTTPAddr) || !plainJSON(member.ClusterAddr) || !plainJSON(member.DataID) {
		return nil, false
	}
	b = append(append(b, `{"id":"`...), member.ID...)
	b = append(append(b, `","http_addr":"`...), member.HTTPAddr...)
	b = append(append(b, `","cluster_addr":"`...), member.ClusterAddr...)
	b = strconv.AppendBool(append(b, `","alive":`...), member.Alive)
	b = strconv.AppendInt(append(b, `,"last_heartbeat_ms":`...), member.LastHeartbeatMs, 10)
	if member.Incarnation != 0 {
		b = strconv.AppendUint(append(b, `,"incarnation":`...), member.Incarnation, 10)
	}
	b = strconv.AppendBool(append(b, `,"draining":`...), member.Draining)
	if member.DiskLow {
		b = append(b, `,"disk_low":true`...)
	}
	if member.DataID != "" {
		b = append(append(append(b, `,"data_id":"`...), member.DataID...), '"')
	}
	return append(b, '}'), true
}

// plainJSON reports whether encoding/json writes s as it is, between
// quotes: printable ASCII but for the quote, the backslash and the three
// characters it escapes for HTML (<, > and &).
func plainJSON(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
