// Package e2e holds tests that run the real narad binary as separate
// processes on loopback: crash recovery with kill -9, and (as the cluster
// grows) multi-process scenarios. Every test bounds its run time and the
// number of requests it sends, and talks to 127.0.0.1 only.
package e2e
