//go:build unix && !linux

package main

import "syscall"

// childProcessAttributes puts a node of `cluster up` in its own process
// group, so that Ctrl-C in the terminal reaches only `cluster up`, which
// then stops the nodes in order.
func childProcessAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
