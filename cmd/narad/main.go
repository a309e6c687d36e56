package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		// A terminal or ssh session that closes stops the command
		// gracefully, and what `cluster up` started with it (its nodes run
		// in their own process group and never see the hangup). A process
		// started with the hangup ignored (nohup) keeps ignoring it.
		signals = append(signals, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
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
