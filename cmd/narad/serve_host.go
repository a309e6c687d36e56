package main

import (
	"context"
	"log/slog"

	"narad/config"
	"narad/host"
)

// runHost starts the production driver, calls started once the node
// listens, and blocks until ctx ends. It is the only place this package
// uses package host.
func runHost(ctx context.Context, cfg config.Config, logger *slog.Logger, started func()) error {
	return host.Run(ctx, cfg, logger, started)
}
