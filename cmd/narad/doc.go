// Command narad is the broker's command-line tool and server entrypoint:
// topic management (with JSON Schemas: topic add/edit --schema, topic
// schema), producing, consuming, replaying, benchmarking, cluster
// administration (through package client) and `narad serve` / `narad
// server start` (configuration through package config, then host.Run).
//
// This package is wiring only: it turns flags, environment and the contexts
// file into client calls or a validated server configuration, and formats
// what comes back. It holds no broker logic.
//
// Exit codes: 0 success, 1 a failed operation (a server error prints
// "narad: http <code>: <message>"), 2 a usage error or an invalid server
// configuration.
package main
