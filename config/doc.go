// Package config owns the server configuration
// (docs/operations.md#configuration): its defaults, the JSON file format, the
// NARAD_* environment variables and the validation rules. The CLI applies
// command-line flags on top.
//
// Layering (each step overrides the previous one): Default() → LoadFile
// (strict JSON: unknown keys, keys given twice, values of the wrong type
// and trailing data are rejected, every one at once, each at its key's
// full path, in the file's terms; keys left out keep their defaults; see
// filekeys.go) → ApplyEnv → flags (cmd/narad) → Validate, which reports
// every problem at once.
//
// Differences from the reference configuration: besides data_dir, codec,
// compression_level and idle_log_eviction_ms, the storage section also
// accepts segment_bytes (the reference rejects it as internal),
// open_logs_max (the cap of partition logs open at once, derived from the
// process's descriptor limit when 0; NARAD_STORAGE_OPEN_LOGS_MAX),
// closed_logs_kept_bytes_max (the memory of the closed logs kept for a
// warm reopen; NARAD_STORAGE_CLOSED_LOGS_KEPT_BYTES_MAX), disk_reserve_bytes
// (the free space under which the node refuses writes;
// NARAD_STORAGE_DISK_RESERVE_BYTES) and group_sync
// (one syncfs for the partitions of a sync round;
// NARAD_STORAGE_GROUP_SYNC); the other internal storage keys of the
// reference (fsync, flush_*, sync_*, …) are
// rejected with a message that says they are internal.
//
// Limits a client could otherwise exhaust are settings of their own, each
// validated: http.max_connections and http.max_body_bytes_in_flight,
// storage.open_logs_max, storage.closed_logs_kept_bytes_max,
// topic.max_topics and topic.max_partitions_per_node (each with a NARAD_*
// variable).
//
// Inputs: a file path or bytes, and a getenv function (so tests and the
// CLI pass their own). Outputs: a Config value and errors; the package keeps
// no state. Secrets (the admin password and the cluster secret) come only
// from the environment and never appear in JSON.
//
// Invariant: a Config that passed Validate satisfies every rule listed on
// Validate; durations are Go durations in the file and the environment
// ("10s", "500ms"); every *Ms / *Bytes field holds the unit its name ends
// with.
package config
