package peer

import (
	"log/slog"

	"narad/loglimit"
)

// failureWarnings logs the warnings about failed inbound connections
// (accept, handshake, a bad message) through one allowance for all of
// them, inboundFailureLogsPerSecond: a scan or a flood of connections
// fails one each. The next line let through says how many were
// suppressed.
type failureWarnings struct {
	limiter *loglimit.Limiter // fixed at creation
}

// failureWarningsKind is the one kind failureWarnings counts under.
const failureWarningsKind = "inbound-failure"

// warn logs a warning through the allowance.
func (f failureWarnings) warn(logger *slog.Logger, message string, args ...any) {
	ok, suppressed := f.limiter.Allow(failureWarningsKind)
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	logger.Warn(message, args...)
}
