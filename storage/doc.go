// Package storage owns the partition log: the files of one partition
// directory, their format, their recovery after a crash, and the
// operations the move protocol needs to copy a live partition. It also
// defines FS, the small file-system interface everything here runs on,
// with a production implementation (OSFS) and an in-memory twin with a
// crash model (MemFS) for the simulator and the tests.
//
// # Layout
//
// One directory per partition (docs/operations.md#data-directory):
//
//	00000000000000000000.log  segments, named by their first offset (20 digits)
//	hwm                       the persisted high watermark, two checksummed slots
//	consumer.offset           the committed consumer offset, 8 bytes + CRC32C,
//	consumer.offset.b         in two files written in turn, in place (offset.go)
//	00000000000000000000.index  a sealed segment's index (segindex.go), CRC32C
//
// A segment is a sequence of frames. A frame is a header (magic, envelope
// length, offset, CRC32C over header and envelope) followed by the record
// envelope (version, flags, time in ms, key length, key, payload); see
// frame.go and record.go. Every frame is checked against
// LogConfig.FrameBytesMax before it is read, and its CRC is verified by
// every Read (and by recovery, for the segments it scans): the log never
// serves unverified bytes.
//
// An open log holds at most LogFilesOpenMax files open, however many
// segments it keeps: its hwm file, its active segment, and the
// sealedFilesOpenMax sealed segments read most recently (a sealed
// segment's file closes once every byte of it is synced and it is not
// among those; a read reopens it). Recovery holds no more: it closes each
// sealed segment once scanned if the hwm file covers all of it (nothing
// later in recovery writes those). What it holds open is the segments the
// hwm file does not cover, those the last round wrote (a round that seals
// a segment writes the hwm file, so one or two unless a round's records
// spanned more), and the hwm file. A move's staged copy keeps likewise
// the files of its newest stagedFilesOpenMax segments open, and of no
// other, synced or not (its Sync reopens one to fsync it).
//
// # The sync round, and why an acknowledged record is never hidden
//
// Append only buffers and indexes a frame; nothing is visible or durable
// yet. Log.Sync runs one round, in this order:
//
//  1. write the buffered frames, fsync every segment written since the
//     last round, and fsync the directory if a segment was created;
//  2. when due (below), write Next (as it was when the round started)
//     into the older slot of the hwm file and fsync it;
//  3. only then raise the visible HWM, so Read and the caller's
//     acknowledgements see the round.
//
// A round can also run in three parts, so that its fsyncs happen off the
// caller's loop while the loop keeps appending (pipelined group commit):
// PrepareSync writes the buffered frames and fixes the round's range
// (Next at that moment) and whether the hwm slot is due; the SyncRound's
// Run does steps 1 and 2 touching only the files it captured; CompleteSync
// does step 3 with the round's value, so frames appended after
// PrepareSync stay invisible until a later round covers them. One round
// at most is in flight per log; while it is, the log counts as Dirty,
// retention deletes nothing and Close leaves the files open until the
// round completes (an fsync covers what was written before it started,
// which is everything the round covers).
//
// RunTogether runs the rounds of several logs as their Runs would, but
// with one GroupSyncer.SyncGroup for the step 1 of them all (OSFS, with
// EnableGroupSync: one syncfs(2) of the file system, which Linux documents
// as an fsync of every file on it, which on ext4 always flushes the
// disk's cache, and which since 5.17 reports every failure an fsync
// would), then step 2 of them all, the hwm slots made durable by one more:
// no hwm slot is written before every round's data is durable.
//
// A produce is acknowledged only after the round covering it returned, so
// its frame is durable. The hwm file is written lazily: step 2 runs only
// when the frames appended since its last write reach
// LogConfig.HWMLagBytesMax bytes, when the newest record's time is
// LogConfig.HWMLagMsMax past the first of them, when a segment was
// sealed, or when the caller asked for it (PersistHWMNextRound: a node
// that closes logs for room asks it of every round, so the logs it closes
// have nothing to write); Close writes it too, with an fsync of its own,
// when it lags. Most rounds therefore cost one data fsync per segment
// written and nothing more. The persisted HWM is a lower bound
// of the durable log, never above it (step 1 before step 2).
//
// After any crash, every acknowledged record is either below the
// persisted HWM or in the contiguous run of valid frames that follows it,
// and recovery (below) keeps that whole run: an acknowledged record is
// never hidden. Below the persisted HWM nothing may silently go: a damaged
// frame there is skipped and reported, never truncated as a torn tail, so
// every record is still readable unless the disk itself lost or damaged
// it, and then recovery reports it (CorruptCount, LostAcknowledged).
//
// The corruption window. Above the persisted HWM recovery cannot tell a
// torn tail from a damaged acknowledged frame, so media damage to an
// acknowledged record there truncates the log at that record: it and
// every record after it are lost (never served wrongly). The window is
// bounded by the lag: at most LogConfig.HWMLagBytesMax bytes of frames
// (and, while records keep arriving, at most LogConfig.HWMLagMsMax of
// record time) lie above the persisted HWM, all of them in the active
// segment. Setting both to 0 writes the hwm file every round and closes
// the window, at the price of a second fsync per round.
//
// The hwm file is written in place with two slots used alternately, so a
// torn slot write leaves the other slot, holding the previous value,
// intact; recovery takes the highest valid slot.
//
// A failed write or fsync on this path latches the log into a failed
// state (ErrLogFailed): every later call returns the same error, and the
// node must reopen the log from disk. A failed fsync is never retried.
//
// # The zero tail of the active segment
//
// A round's fsync is cheapest when its frames overwrite blocks that are
// already allocated, written and durable: the file system then commits
// data only, with no size change, block allocation or extent conversion
// to journal. So the active segment keeps zeros written in its file ahead
// of its frames, its zero tail: frames are written at the logical end
// (WriteAt, never an append at the end of the file), and a round that
// leaves less than half a step of zeros ahead writes the next step of
// zeros past the logical end before its fsync, which makes them durable
// with the frames. Steps grow with the bytes the segment took since its
// log opened, between zeroTailStepMinBytes and zeroTailStepMaxBytes
// (fs.go), and stop at LogConfig.SegmentBytes, so an empty partition
// holds a few tens of kilobytes of zeros and no round writes megabytes of
// them. A log that closes keeps zeroTailKeptBytes of its tail at most (a
// first step): reopened (a node with more partitions than open logs
// closes and reopens them all the time), its first rounds write over
// those zeros, where a new tail would cost each reopen a block allocation
// in its first fsync. The zeros a node holds are therefore bounded by
// zeroTailKeptBytes per partition whose log closed cleanly (Close, or the
// completion of the round a Close left in flight), and by
// zeroTailStepMaxBytes per open log, per failed log, and per log open at
// a crash until it is opened and closed again (LogStats.ZeroTailBytes and
// Store.ZeroTailBytes count them; the node's metric sums them). It works on
// any FS (plain positioned writes), the in-memory one included, so the
// simulator's crashes tear and lose zero writes like frame writes.
//
// The file of the active segment is therefore longer than the log: every
// size the log uses is the logical one (frames), never the file's. A
// sealed segment ends at its last frame: sealing truncates the zero tail
// (durable with the segment's next fsync, or cut again by recovery), so
// moves, retention and reads of sealed segments see exact files.
// Recovery recognises a zero tail: the valid frames stop and every byte
// after them is zero (a frame starts with a non-zero magic, so a torn
// frame, even one whose header is partly zero, is never all zeros). That
// is the clean end of the log, not a torn tail: it is neither truncated
// as damage nor reported as such (Recovery.ZeroTailBytes counts it). The
// last segment keeps it and writes its next frames over it; an earlier
// segment is cut there, durably. A tail holding anything but zeros after
// the last valid frame is a torn tail, handled as below. Zeros that start
// below the persisted HWM in the last segment are no zero tail either:
// acknowledged frames read as zeros when the disk lost their write, and
// they are damage (below).
//
// # Recovery (OpenLog)
//
// Recovery reads the hwm file and verifies every frame of every segment,
// in offset order, but for sealed segments it takes from their index
// files (below). Offsets must follow each other without gaps.
//
//   - Below the persisted HWM every frame was acknowledged and must be
//     intact. An invalid frame there is corruption in the middle: the
//     scan resynchronises on the next genuine frame (below); the offsets
//     in between, the damaged one always included, are reported
//     (Recovery.CorruptCount exact, CorruptOffsets bounded) and Read
//     returns ErrCorrupt for them, forever.
//   - At or above the persisted HWM, the first invalid frame (or the first
//     missing offset) is a torn tail: the segment is truncated there and
//     the later segments are removed, durably.
//   - Valid frames above the persisted HWM are the contiguous run that
//     ends at the first invalid frame: acknowledged records (durable, as
//     the lazy hwm file lagged), and frames written but never
//     acknowledged, which may still sit only in the page cache after a
//     process crash. Recovery exposes the whole run: the HWM becomes the
//     end of the valid log only after those segments and the directory
//     are fsynced and the new HWM is written, before anything is served,
//     so what becomes visible is durable and stays visible. The run's
//     bytes are written again before that fsync: they may be a round
//     whose fsync failed before the restart, and Linux marks the pages of
//     a failed write-back clean, so a bare fsync would succeed without
//     writing them (rewritten, they are dirty again). At-least-once
//     delivery allows the unacknowledged ones; the producer may have
//     retried them, giving duplicates, never gaps.
//   - Damage in the last segment below the persisted HWM with no frame
//     taken after it is corruption too, never a torn tail, whether its
//     bytes are garbage or zeros to the end of the file: the offsets up
//     to the persisted HWM are reported corrupt and skipped, and no
//     offset is used twice. The damaged bytes stay (they hold the
//     skipped offsets while the segment may be the last one again), and
//     the first append seals the segment as it is and starts a new one
//     at the persisted HWM, so no later recovery has to find a frame
//     past the damage (a byte scan there cannot tell the last
//     acknowledged frame, followed by a torn append, from a frame inside
//     a payload). Until then the damage is the end of the log; after, a
//     gap in a sealed segment, whose zeros recovery keeps.
//   - A damaged hwm file (it exists, neither slot is valid) protects
//     sealed segments all the same: the persisted HWM is taken to be at
//     least the base of the last segment, since a segment's file becomes
//     durable in the sync round that makes the frames before it durable.
//     Damage in a sealed segment is then corruption in the middle, never a
//     reason to cut the log and remove every later segment.
//   - If the persisted HWM is above the recovered end because the last
//     segment is short (its bytes are gone, or too few, zeros included, to
//     hold the missing offsets), the difference is reported as
//     Recovery.LostAcknowledged and the HWM is lowered to the recovered
//     end (and persisted). Appends then reuse those offsets.
//
// Resynchronising must not take a frame encoded inside a payload (a topic
// may carry raw segment bytes, a producer may craft them) for a genuine
// one, or it would serve the wrong bytes for the damaged offset, or for the
// next one, read before with its own record. The damaged frame began where
// the frame before it ended, so a frame found later claiming its offset is
// never genuine: the next genuine frame has a higher offset. It is
// searched for in two ways:
//
//   - The length fields. Damage to a frame's magic, offset, CRC or
//     envelope leaves its length intact, so the next frame starts where
//     the declared length ends. The walk follows the lengths through a
//     run of damaged frames to the first valid frame, which must claim
//     exactly the offset the walk counted. This is the common case, and it
//     never looks inside a damaged payload.
//   - A byte scan for the magic from inside the damaged frame, for when a
//     length field of the run is damaged too. A candidate must claim a
//     higher offset, below the next segment's base, with few enough
//     skipped offsets to fit in the skipped bytes.
//
// Either frame is taken only if corroborated: the frame right after it is
// valid and claims the next offset, or it ends where the segment's content
// ends (end of file or zero tail) and claims an offset that must exist:
// below the persisted HWM, or, in a sealed segment, below the next
// segment's base (a roll starts a segment at Next; the first recovery
// after a close or crash that left a sealed segment above the persisted
// HWM writes an HWM past it, so every later recovery would take such a
// frame, and the first must agree). A frame inside a payload is followed
// by the rest of the payload or by the genuine next frame, whose offset
// does not follow its own, so it is refused; a torn tail after a frame
// does not corroborate it either (the rest of a payload looks the same).
// The walk's frame is also taken uncorroborated when the scan's
// corroborated frame lies after it and claims a higher offset, or when
// the scan finds none and it claims an offset that must exist, so an
// intact frame between two damaged ones is kept. Otherwise a frame nothing corroborates is
// reported corrupt with the damaged ones: lost and said so, never served
// wrongly.
//
// The risk left needs records that hold encoded frames, and media damage
// in the wrong place; records that hold none cannot produce it short of a
// CRC32C collision, as every frame taken needs a valid CRC. When the byte
// scan runs, a payload holding a chain of two or more frames claiming
// consecutive offsets above the damaged one corroborates itself; and in a
// run of damaged frames whose walk broke on a damaged length, a frame of
// the run (not the first) whose payload ends with a frame claiming the run
// frame's own offset is corroborated by the genuine frame after it. A
// damaged length field that points exactly at a frame inside a payload
// claiming the offset the walk expects there can make the walk take it.
// And when the disk also lost the acknowledged frames after the damaged
// one (LostAcknowledged), a frame ending the damaged payload can be taken
// for the first lost offset. Each serves the inner frame's bytes for the
// offset it claims.
//
// The refusals cost one more record in one layout: media damage to the
// frame just below the persisted HWM while exactly one frame, intact and
// synced, lies past it at the end of the log (the hwm file lags by that
// frame). Nothing corroborates that frame (it ends the content but does
// not claim an offset below the persisted HWM), and from the layout alone
// it looks the same as a frame inside the damaged payload that the damaged
// length points at, so it is left unindexed after the damaged one: two
// acknowledged records lost where one was damaged, the damaged one
// reported corrupt, the other unreported, and its offset taken by the next
// append. With two or more frames past the persisted HWM the next one
// corroborates it.
//
// The committed consumer offset, the highest valid value of its two files,
// is then clamped into [Oldest, HWM]; with no valid file among those
// present it resets to Oldest (redelivery, never loss).
//
// # Segment index files
//
// A scan reads every byte of a segment, so a log of many sealed segments
// took a read of all of it at its first open after a start (0.55 s a GB
// from the page cache on a two-core VM, 0.9 s cold), on the caller's
// loop. With LogConfig.SegmentIndexFiles (on by default), a sealed
// segment gets an index file once the persisted HWM covers it: written
// by the round that persisted that HWM (or by Close, or by the recovery
// that scanned it), holding what a scan of it finds (frame positions,
// corrupt offsets, newest record time) and a CRC32C. It is synced, and
// the next round syncs the directory, so it outlives a power loss too; a
// failure to write or sync it is not the log's (the segment is scanned
// at the next open), which costs one small fsync per sealed segment; the
// roll that seals a segment whose frames were all synced also fsyncs it,
// so that the size its zero tail was cut to, which the index names, is
// durable before the index (otherwise a power loss leaves the tail and
// every such segment is scanned again). Such a
// segment never changes again: recovery cuts nothing below the persisted
// HWM, retention removes the oldest segments only (their index first), and
// a partition directory is only ever replaced whole (delete, install).
//
// Recovery takes a sealed segment the persisted HWM covers from its index
// when the file holds: its checksum and its own consistency (positions in
// order, counts that add up), the base, next base and size of the segment
// file beside it, and the first and last frames it indexes read back as
// the offsets it gives them. Otherwise (missing, torn by a crash, stale)
// the segment is scanned as before and its index written again. The
// active segment, and every segment the persisted HWM does not cover, is
// always scanned; an index left without its segment is removed.
//
// What the index spares is the check of every frame's CRC at the start:
// media damage inside such a segment since its index was written is found
// by Read, which verifies every frame (ErrCorrupt, as for damage after a
// recovery), not by the recovery. A move carries over exactly its
// source's known corruption and its destination refuses a copy with
// more, so the source scans those segments (Log.VerifySegments, a bounded
// number a call: the node scans one at each move request, and answers no
// final state before all are); damage found there becomes corrupt offsets
// as a recovery's would, and the index is rewritten with them. A property test holds a recovery with
// index files to one without across histories of appends, rolls,
// retention, closes and crashes with torn writes.
//
// The index files also bound the memory of an open log. The positions of
// a sealed segment (4 bytes a record) are paged out once its index file
// holds them (written or read by this log), but for the sealed segments
// read most recently, as many as LogConfig.ResidentPositionsBytesMax (8
// MiB) holds and at least residentSealedSegmentsMin (2); a read of a
// paged-out segment pages it in from its index file (checksum, and the
// base, next base, size and count the log knows), pages others out, and
// an index file that no longer holds is replaced by a scan of the
// segment, as VerifySegments scans. A segment with corrupt offsets stays
// resident (Corruption lists them without a read). So an open log holds
// the positions of its active segment and at most 8 MiB (or two
// segments') more, whatever its length; without index files (or where
// writing one failed) every position stays in memory as before. Readers
// taking turns over more old segments than that (many lagging fan-out
// cursors of one parent, say) read an index file at each turn: a few
// hundred microseconds for a segment of 64 MiB of 256-byte records. A
// segment whose index file no longer holds and whose scan fails (a bad
// sector) is scanned again at each read that reaches it.
//
// # Warm reopen (Store.Evict, Store.CloseIdle)
//
// Recovery reads every frame, so reopening a large log costs a read of
// all of it. A Store keeps the logs it evicts or closes for idleness
// when their close left their files exactly as their state describes
// (reopen.go), within a budget of index memory, and opens such a log
// again from that state after checking that its directory is as the
// close left it; any other open recovers. Store.Close, Store.CloseUnder
// and Store.Adopt forget a kept log; the node keeps logs only of what it
// serves, which leaves through a Store.Close before its directory is
// removed or replaced (reopen.go). A warm reopen
// and a recovery of the same files show the same log (a property test
// holds them to it).
//
// # Invariants
//
//   - Oldest() <= Committed() <= HWM() <= Next(); HWM never decreases while
//     a log is open, and Committed only moves forward.
//   - Offsets in [Oldest, HWM) are durable; every one of them reads back
//     as the record appended there, or as ErrCorrupt if recovery skipped it.
//   - The persisted HWM (the hwm file) is at most HWM, and lags it by less
//     than the bounds of the corruption window above.
//   - The in-memory index holds, per segment, the byte position of every
//     offset (a uint32 each, so Read is one lookup and one ReadAt) and the
//     newest record time, which retention compares.
//   - Whatever makes a directory under the data directory makes its entry
//     durable before it returns: ensureDir (MkdirAll, then a sync of each
//     parent), InstallStaged and RepairInstall (a rename, then a sync of
//     the parent); DeletePartition's rename aside is synced too. A Store
//     relies on it: it skips the syncs of directories it made durable
//     itself while they exist (Store.ensured), so a new way to make one
//     must sync its parent as well.
//
// # Moves
//
// Log.Segments and Log.ReadChunk expose only durable bytes below the HWM,
// cut at a frame boundary, so a destination copying them chunk by chunk
// (StagedCopy) while the source keeps appending gets a prefix of frames.
// SetState reproduces the source's HWM and committed offset, VerifyStaged
// recovers the copy as a log and refuses it if it falls short, and
// InstallStaged renames it into place, setting aside the directory it
// replaces until the installed copy verified (CommitInstall records that,
// DropReplaced then removes it; UndoInstall puts it back; RepairInstall
// finishes or undoes an install a crash interrupted: an aside copy comes
// back, a replaced one goes). DeletePartition removes a directory: it
// renames it aside first (durably), so that a removal that stops partway
// leaves nothing under the name (DeletingLeftover names what it leaves
// aside).
//
// A copy carries the source's corruption: its segments are byte copies,
// so a frame recovery skipped at the source is skipped again in the copy.
// Log.Corruption reports it (exact count, first offsets up to
// CorruptOffsetsReportedMax, for the retained segments), the source sends
// it with its state, and VerifyStaged and OpenVerified take it as their
// allowed argument: a copy is accepted only if its corruption is exactly
// that (same count, same offsets as far as both lists go, all below the
// copy's HWM; checkCorruption is the one place of the rule). Anything else
// corrupt was damaged in the copy and refuses it (ErrStagedBehind and
// ErrCorrupt). The installed log then answers ErrCorrupt for the same
// offsets, forever, and its recovery reports them at every open, as the
// source's did: the records were lost before the move, not by it.
//
// # Inputs and outputs
//
// Inputs: an FS, directory names, a validated LogConfig, records, and
// the time as arguments (nowMs); there is no clock, goroutine or global
// randomness here, and no map order reaches an output. Outputs: files on
// the FS, and return values: offsets, records, Recovery and
// RetentionResult reports, and sentinel errors (errors.go). Broken
// invariants panic through assert; costlier cross-checks (each appended
// frame decoded back) run when built with -tags invariants.
//
// A Log and a Store are used from one goroutine (the node's loop). A Log
// keeps every segment file of the partition open. A Store holds at most
// its cap of open logs (NewStore's openMax): at the cap, Log refuses
// (ErrOpenLogsFull) and the caller closes the least recently used log
// that has nothing to sync (LeastRecent); Store.CloseIdle closes logs
// unused for a while.
package storage
