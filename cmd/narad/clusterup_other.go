//go:build !unix

package main

import "syscall"

// childProcessAttributes: without process groups, the nodes share the
// terminal's Ctrl-C with `cluster up`, which still stops them in order.
func childProcessAttributes() *syscall.SysProcAttr {
	return nil
}
