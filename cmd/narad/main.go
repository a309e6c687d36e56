package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGHUP too: a terminal or ssh session that closes must stop what
	// `cluster up` started (its nodes run in their own process group and
	// never see the hangup themselves).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		// After the first signal, restore the default handling so that a
		// second Ctrl-C ends the process at once.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, newProcessApp(), os.Args[1:])
	stop()
	os.Exit(code)
}
