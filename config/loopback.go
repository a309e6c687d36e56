package config

import "net"

// LoopbackAddr reports whether a host:port listens on loopback only: a
// loopback IP, or localhost. An empty host or a wildcard address listens
// on every interface, and a malformed address on none known: neither is
// loopback. It judges a configured address (serve --dev) and a bound one
// (the host's start warnings) alike; it was two functions, of which only
// one took localhost.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
