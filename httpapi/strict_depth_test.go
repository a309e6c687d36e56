package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A body nested exactly jsonNestingDepthMax deep is one encoding/json
// accepts (its scanner allows 10,000 open containers); a key given twice
// after its deepest value must still be refused (docs/api.md#conventions),
// but findDuplicateKey gives up once its stack holds
// jsonNestingDepthMax frames, so the duplicate passes and the last wins.
func TestDuplicateAfterAMaximallyDeepValueIsRefused(t *testing.T) {
	depth := jsonNestingDepthMax - 1 // the body's own object is the last level
	schema := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	body := `{"schema":` + schema + `,"retention_ms":3600000,"retention_ms":7200000}`
	var value alterTopicBody
	err := decodeStrictJSON([]byte(body), &value)
	require.Error(t, err, "accepted, retention_ms = %d", derefInt64(value.RetentionMs))
	require.Contains(t, err.Error(), "duplicate field")
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
