package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
