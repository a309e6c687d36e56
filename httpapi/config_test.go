package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultCodecConfigIsValid(t *testing.T) {
	require.NoError(t, DefaultCodecConfig().Validate())
}

func TestCodecConfigReportsEveryProblem(t *testing.T) {
	config := CodecConfig{ConsumeWaitMaxMs: -1, JSONBodyBytesMax: 0, MessageBodyBytesMax: 0, BatchBodyBytesMax: 1}
	err := config.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"consume wait max -1 ms is negative",
		"json body bytes max 0 must be > 0",
		"message body bytes max 0 must be > 0",
		"batch body bytes max 1 below the batch payload max 8388608",
	} {
		require.ErrorContains(t, err, want)
	}
}

func TestCodecConfigMessageCapWithinBatchCap(t *testing.T) {
	config := DefaultCodecConfig()
	config.MessageBodyBytesMax = 9 << 20
	require.ErrorContains(t, config.Validate(), "message body bytes max 9437184 above the batch payload max 8388608")
}

func TestNewCodecRefusesInvalidConfig(t *testing.T) {
	require.PanicsWithValue(t, "httpapi: invalid codec config: json body bytes max 0 must be > 0", func() {
		config := DefaultCodecConfig()
		config.JSONBodyBytesMax = 0
		NewCodec(config)
	})
}
