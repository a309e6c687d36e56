package main

import (
	"context"
	"log/slog"

	"narad/config"
	"narad/host"
)

// runHost starts the production driver and blocks until ctx ends. It is the
// only place this package uses package host.
func runHost(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	return host.Run(ctx, cfg, logger)
}
