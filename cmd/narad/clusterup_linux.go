//go:build linux

package main

import "syscall"

// childProcessAttributes puts a node of `cluster up` in its own process
// group, so that Ctrl-C in the terminal reaches only `cluster up`, which
// then stops the nodes in order; and asks the kernel to send the node
// SIGTERM (a graceful stop) if `cluster up` dies without stopping it (a
// kill -9), so no node is left holding its ports and data directory. The
// kernel ties the signal to the thread that started the node: Go keeps
// its threads while the process runs, and nothing here locks one.
func childProcessAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
