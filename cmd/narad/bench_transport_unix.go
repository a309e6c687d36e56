//go:build unix

package main

import (
	"errors"
	"net"
	"syscall"
)

// stillOpen reports whether the server has not closed conn, looking
// without blocking: at the end of the stream (the server closed it), or
// with bytes nobody asked for waiting, or on any error, the connection is
// not to be used again.
func stillOpen(conn net.Conn) bool {
	syscallConn, ok := conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := syscallConn.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var probe [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, recvErr := syscall.Recvfrom(int(fd), probe[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = errors.Is(recvErr, syscall.EAGAIN) || errors.Is(recvErr, syscall.EWOULDBLOCK) // nothing to read yet
		return true                                                                          // never wait for the socket to become readable
	})
	return err == nil && open
}
