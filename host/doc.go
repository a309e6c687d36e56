// Package host is the production driver of a node: it runs the
// deterministic node state machine on real goroutines, files, sockets and
// the wall clock.
//
// Concurrency is confined here. The goroutines are:
//   - the loop: the only goroutine that touches the node. It gathers
//     inputs (requests and cancels from HTTP handlers, envelopes from
//     peers, clock ticks), feeds them to the node, and handles each Ready
//     in the contract's order: persist (the Ready's Syncs, in parallel
//     across partitions), then send the Ready's envelopes to peers, then
//     deliver replies, then Advance. After each persist, before the
//     replies leave, it republishes the node's topic schemas for the HTTP
//     layer when the node's SchemaEpoch changed (an atomic pointer to an
//     immutable view), so that a request answered after a schema version
//     applied finds it in the view. After each flush it hands the node's
//     address book (node.ClusterAddrs, at most once per
//     peerRefreshInterval) to the transport;
//   - the HTTP server's goroutines (package httpserve, one per
//     connection), which only decode requests, hand them to the loop
//     through a bounded inbox, and wait for their reply; once a consume
//     that may park has waited watchCloseAfter (most are answered at
//     once), a second goroutine of its connection reads it to notice a
//     client that leaves (httpserve.WatchClose);
//   - in a cluster, the goroutines of the node-to-node transport (package
//     peer): its readers hand envelopes to the loop through a second
//     bounded inbox (peers first, so client floods cannot delay Raft), and
//     its writers send what the loop queued. The transport starts before
//     the loop and closes after the loop stopped;
//   - short-lived sync workers, one per partition of a Ready, joined
//     before the loop goes on; with group sync (storage.group_sync, on by
//     default where it is safe: ext4 on Linux 5.17 or later) a Ready that
//     makes records of groupSyncRoundsMin or more partitions durable, on
//     a node where no move is staging a copy, runs their rounds together
//     on the loop goroutine instead (node.RunTogether: one syncfs), the
//     metastore's persist beside it.
//
// Every goroutine starts through Host.goFunc, registered with a WaitGroup,
// so shutdown can wait for all of them.
//
// Start order (host.go's Start): what can refuse a start without writing
// refuses it before anything is written. OptionsFrom reads the TLS files
// with the rest of the configuration (tlsfiles.go); Start binds the API's
// listener, pprof's and, in a cluster, starts the transport (envelopes
// from peers queue for the loop, which does not run yet); then it checks
// an existing data directory, reading only (another node's identity,
// partition data without a metastore file), and only then creates the
// directory, opens the metastore (its file lock keeps a second process
// off the directory), recovers the node and writes a new directory's
// identity. The API and pprof are served once the node is recovered (a
// client that connects before waits in the listen backlog; requests
// queue in the inbox until the loop runs).
//
// Group commit: while the loop persists one Ready, new requests queue in
// the inbox; the next iteration handles all of them (up to
// inputsPerRoundMax inputs) before the next Ready, so they share one sync
// round per partition. A round that holds a sync or a forward of produced
// records (node.SharesRound) then waits up to gatherWindowMax for as many
// client requests as the last flush answered plus those queued when it
// began answering, so that closed-loop clients share one round instead
// of alternating in two, each waiting for the other's fsync; a round of
// consumes, acks and reads answers at once
// (narad_loop_gather_waits_total counts the rounds that waited). Peer
// envelopes do not count as client requests in the gather window. The loop does not feed the node while a Ready's
// syncs run, though the node contract would allow it (loop.go's flush
// says why).
//
// Disk (loop.go's checkDisk, metaroom.go): about once a second, between
// rounds, the loop tells the node its data directory's free space (the
// node keeps its disk reserve from it) and keeps the metastore's file
// allocated 32 MiB past its end, so that a disk filled by other programs
// does not stop the node at its next metastore write
// (narad_metastore_room_ahead_bytes).
//
// Cluster configuration (cluster.peers) becomes the metastore's voters
// (raft ids from meta.RaftIDOf), the node's reachable cluster and HTTP
// addresses, and the transport's peers, secret and mutual TLS (run.go,
// cluster.go). A refused peer envelope is counted
// (narad_peer_step_errors_total) and logged at debug level, never fatal.
//
// Security (security.go): the loop publishes the node's users to the
// authenticator (package auth) after each persist whose applied users
// changed, before that Ready's replies leave, so a user change is in
// force on this node once answered; HTTP handlers verify credentials
// against that copy without entering the loop. User changes reach the
// node as ChangeUsers inputs. With security on, the host hashes the root
// password (NARAD_ADMIN_PASSWORD, else a random 192-bit one) before the
// node starts and hands the node the hash (node.Config.RootSeedHash); the
// node proposes it while it leads and no user exists, and the host logs
// the seeding (the generated password with it) once the node reports its
// seed applied. The HTTP listener serves TLS when a certificate is given.
//
// Descriptor budget (limits.go): at start the host reads the process's
// descriptor limit (RLIMIT_NOFILE) and logs it with the caps it holds.
// The cap of open partition logs (storage.open_logs_max) is derived from
// it when not set (half the limit, budgeting descriptorsPerLogBudget per
// log), and a configured cap the limit cannot hold refuses the start. The
// node closes the least recently used idle log to admit another
// (narad_open_partition_logs, narad_open_partition_logs_max,
// narad_partition_log_evictions_total); when every open log has
// unsynced data the request gets a retryable 503. The HTTP listener admits
// at most HTTPConnectionsMax connections at once (http.max_connections,
// a quarter of the descriptor limit when not set; listener.go): one more
// is answered 503 with Retry-After and closed at once
// (narad_http_connections_open, _max, _refused_total).
//
// A failed fsync ends the node: replies of that Ready are not sent,
// waiting requests get 503, and Run returns the error so the process exits
// and restarts from what is really on disk (node package doc).
package host
