package storage

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
)

// memFileChunkBytes is the size of the chunks MemFS stores file content
// in: large enough that a chunk costs little bookkeeping, small enough
// that the last, partly filled chunk of a file wastes little memory.
const memFileChunkBytes = 256 << 10

// tornWriteProbabilityDefault is the chance, per file with an unsynced
// write that may tear (see MemFS), that part of that write survives a
// Crash. A new MemFS uses it until SetTornWriteProbability changes it.
const tornWriteProbabilityDefault = 0.5

// Errors MemFS returns for which fs.go has no sentinel. OSFS returns the
// corresponding errno unmapped, so callers must not rely on either.
var (
	errMemNotDir         = errors.New("storage: not a directory")
	errMemIsDir          = errors.New("storage: is a directory")
	errMemNegativeOffset = errors.New("storage: negative offset")
	errMemRenameIntoSelf = errors.New("storage: cannot move a directory into itself")
)

// FaultOp names a kind of MemFS operation that faults can be injected into.
type FaultOp int

const (
	// FaultWrite covers File.Write, File.WriteAt and File.Truncate.
	FaultWrite FaultOp = iota
	// FaultSync covers File.Sync (not SyncDir).
	FaultSync
	// FaultRename covers FS.Rename.
	FaultRename
	// FaultCreate covers FS.Create.
	FaultCreate
	// FaultSyncDir covers FS.SyncDir.
	FaultSyncDir
	// FaultOpen covers FS.Open.
	FaultOpen
	// FaultRead covers File.ReadAt.
	FaultRead
	// FaultRemove covers FS.Remove and FS.RemoveAll.
	FaultRemove
	// faultOpCount is the number of FaultOp values; it is not an op.
	faultOpCount
)

// String returns the name of the operation kind.
func (op FaultOp) String() string {
	names := [faultOpCount]string{"write", "sync", "rename", "create", "syncdir", "open", "read", "remove"}
	if op < 0 || op >= faultOpCount {
		return fmt.Sprintf("FaultOp(%d)", int(op))
	}
	return names[op]
}

// MemFSStats counts what a MemFS did, for the simulator's report. Every
// field only grows, except that a CrashClone starts from a copy.
type MemFSStats struct {
	Writes         int64 // successful File.Write and File.WriteAt calls
	WrittenBytes   int64 // bytes written by those calls
	Truncates      int64 // successful File.Truncate calls
	Syncs          int64 // successful File.Sync calls
	DirSyncs       int64 // successful SyncDir calls
	GroupSyncs     int64 // successful SyncGroup calls (their files and directories count as above)
	Renames        int64 // successful Rename calls
	Crashes        int64 // Crash and CrashWith calls (and the crash a CrashClone starts from)
	InjectedFaults int64 // operations failed by FailNext or SetFailureProbability
	NoSpaceErrors  int64 // writes refused because of SetCapacity
	UnsyncedFiles  int64 // files that had unsynced changes at a crash
	TornWrites     int64 // writes a crash cut short (kept some, not all, bytes)
}

// MemFS is an in-memory FS with a crash model, for the simulator and for
// property tests. It is not safe for concurrent use: the simulator drives
// it from one goroutine.
//
// Crash model. Every file has current content and durable content; every
// directory has current entries and durable entries.
//
//   - File.Sync makes the file's current content its durable content. It
//     does not make the file's name durable.
//   - SyncDir(dir) makes dir's current entries its durable entries: a
//     Create, MkdirAll, Rename or Remove of a name in dir is durable once
//     SyncDir(dir) succeeds. Directories made by MkdirAll follow the same
//     rule as files: a new directory survives a crash only once its parent
//     was synced (and its parent's parent, up to the root). The root always
//     exists.
//   - A rename is one operation: SyncDir of either the source or the
//     target directory makes both halves durable together, so a crash never
//     shows a file or directory under two names, nor loses it to a half
//     durable rename. The new name survives only if its directory does:
//     renaming into a directory created since its parent's last SyncDir
//     risks the file. Making an entry durable also makes durable an
//     earlier rename that freed its slot, and the renames that would
//     otherwise put a directory durably inside itself.
//   - RemoveAll is one entry change in the parent: until SyncDir(parent) a
//     crash brings back the whole subtree as it was durable.
//   - Create of an existing file truncates it in place: the durable content
//     stays until File.Sync, like any other unsynced truncation.
//
// Crash (power loss) rebuilds the tree from the durable entries, starting
// at the root, and reverts every file in it to its durable content, with
// one exception, the torn write. With probability SetTornWriteProbability
// per file, a prefix of one unsynced write survives, cut at a uniformly
// random byte boundary (at least one byte, possibly all of them):
//
//   - if since its last Sync the file only grew by appends (Write, WriteAt
//     at or past the durable size, Truncate upwards), the write is
//     everything past the durable size: the file keeps its durable content
//     followed by a prefix of the bytes appended after it;
//   - if durable bytes were overwritten (WriteAt) or truncated since the
//     last Sync, the write is the most recent WriteAt that changed durable
//     bytes, clipped to the durable size and to later truncations: the file
//     keeps its durable size and content, except that a prefix of that
//     WriteAt's range holds the bytes it wrote. Everything else unsynced
//     (appends, other overwrites, truncations) is lost.
//
// Either way a crashed file holds only bytes that were written at their
// position, and every byte outside the one torn write is durable content.
// Every File opened before a crash is dead afterwards: each of its methods
// returns ErrClosed.
//
// Faults. FailNext and SetFailureProbability make operations of one
// FaultOp kind fail with a given error. A failed write or truncate changes
// nothing, a failed Sync or SyncDir makes nothing durable, a failed Rename
// or Create changes nothing. SetCapacity bounds the bytes of all files
// reachable from the root; a write or truncate beyond it fails with
// ErrNoSpace and changes nothing.
//
// Determinism: every random choice comes from the rng given to NewMemFS,
// and every walk over a directory goes in name order, so the same seed and
// the same calls give the same results.
type MemFS struct {
	// rng draws torn tails and probabilistic faults. Never nil; set once.
	rng *rand.Rand
	// root is the root directory: always present, always durable.
	root *memNode
	// epoch counts crashes. A handle opened in an earlier epoch is dead.
	// Only CrashWith changes it.
	epoch uint64
	// faults holds the injected-fault rules, indexed by FaultOp. Changed
	// by FailNext, SetFailureProbability, ClearFaults and by injectFault
	// as it consumes FailNext counts.
	faults [faultOpCount]memFaultRule
	// tornWriteProbability is in [0, 1]; set by SetTornWriteProbability.
	tornWriteProbability float64
	// capacityBytes bounds usedBytes; 0 means unlimited. Invariant:
	// capacityBytes >= 0. Set by SetCapacity.
	capacityBytes int64
	// usedBytes is the total content length of the files reachable from
	// root. Every operation that changes a reachable file's size or
	// unlinks a file updates it; a crash recomputes it.
	usedBytes int64
	// stats only grows; every operation adds to it.
	stats MemFSStats
	// fileChunkBytes is the chunk size of the content of new files, > 0.
	// Set by NewMemFS; tests lower it to exercise chunk boundaries.
	fileChunkBytes int64
	// sharesContent is set on a view made by DurableCloneDirView: the
	// files it copies share their bytes with the source's (memContent's
	// shared).
	sharesContent bool
	// syncNames is SyncDir's list of the names of the directory it syncs,
	// reused from call to call (the node syncs a directory with every
	// file it makes); it means nothing between calls.
	syncNames []string
}

// memFaultRule is the injected-fault configuration of one FaultOp.
type memFaultRule struct {
	// nextErr is returned by the next nextCount operations. Invariant:
	// nextErr != nil when nextCount > 0.
	nextErr   error
	nextCount int
	// nextMatch, when set, limits the next-count rule to the operations
	// whose path (a rename's source) it accepts; the others proceed and
	// do not count.
	nextMatch func(name string) bool
	// probabilityErr is returned with probability probability, in [0, 1].
	// Invariant: probabilityErr != nil when probability > 0.
	probabilityErr error
	probability    float64
}

// memNode is a file or a directory. A node has a current location (parent
// and name) and a durable location (durableParent and durableName); either
// may be absent.
type memNode struct {
	// file is the content of a file, nil for a directory. Set at creation.
	file *memFile
	// children are the current entries of a directory, nil for a file.
	// Invariant: children[c.name] == c exactly when c.parent == this node.
	// Changed only by link and unlink.
	children map[string]*memNode
	// durableChildren are the entries as of the last SyncDir, nil for a
	// file. Invariant: durableChildren[c.durableName] == c exactly when
	// c.durableParent == this node. Changed only by linkDurable and
	// unlinkDurable.
	durableChildren map[string]*memNode
	// parent is the directory currently holding the node, nil for the root
	// and for removed nodes; name is the node's entry in it.
	parent *memNode
	name   string
	// durableParent is the directory whose durable entries hold the node,
	// nil for the root and for nodes that would not survive a crash.
	durableParent *memNode
	durableName   string
}

// memFile is the content of a file: current bytes, plus what is needed to
// rebuild the durable bytes without keeping a copy of them. The durable
// content is the first durableSize bytes of content with the undo records
// applied from the last to the first (the first record of a range holds
// its durable bytes).
type memFile struct {
	// content is the current content.
	content memContent
	// durableSize is the size of the durable content. Set by Sync and by a
	// crash.
	durableSize int64
	// undo saves durable bytes before an overwrite or a truncation changes
	// them, within [0, durableSize). Invariant: if undo is empty, then
	// content.size >= durableSize and the first durableSize bytes of
	// content are the durable content. Cleared by Sync and by a crash.
	undo []memUndo
	// lastOverwrite is the range of the most recent WriteAt that changed
	// durable bytes, clipped to durableSize and to later truncations; its
	// bytes are still in content. Empty when there is none. Invariant:
	// lastOverwrite.end() <= min(durableSize, content.size). Set by writeAt,
	// clipped by truncate, cleared by Sync and by a crash.
	lastOverwrite memRange
}

// memRange is a byte range of a file, empty when length is 0.
type memRange struct {
	offset int64
	length int64
}

func (r memRange) end() int64 { return r.offset + r.length }

// memContent is a byte sequence stored in chunks, so that a growing file
// never copies what it already holds, and reads and overwrites cost only
// the bytes they touch.
type memContent struct {
	// chunks hold the bytes. Invariant: len(chunks) is size/chunkBytes
	// rounded up; every chunk but the last holds chunkBytes bytes and the
	// last holds the rest (a chunk's len is the bytes it holds).
	chunks [][]byte
	// size is the length of the content in bytes.
	size int64
	// chunkBytes is the chunk size, > 0. Set at creation.
	chunkBytes int64
	// shared is set when the chunks may be another content's too
	// (sharePrefix): no byte of them is written in place. overwrite
	// copies every chunk first (and clears shared), and each chunk's
	// capacity is its length, so that an append reallocates it.
	shared bool
}

// memUndo is a range of durable bytes saved before they were changed.
type memUndo struct {
	// offset is where old starts in the file. Invariant: offset >= 0 and
	// offset+len(old) <= durableSize of the file at the time.
	offset int64
	old    []byte
}

// memHandle is a File of a MemFS.
type memHandle struct {
	// fs is the file system the handle belongs to. Set once.
	fs *MemFS
	// node is the file; it keeps working after the name is removed, as on
	// a POSIX file system. Set once.
	node *memNode
	// name is the path the file was opened by, for error messages.
	name string
	// epoch is fs.epoch when the handle was opened; a crash kills it.
	epoch uint64
	// closed is set by Close.
	closed bool
}

// NewMemFS returns an empty in-memory FS whose random choices (torn writes,
// probabilistic faults) come from rng. rng must not be nil.
func NewMemFS(rng *rand.Rand) *MemFS {
	assert(rng != nil, "NewMemFS: rng is nil")
	return &MemFS{
		rng:                  rng,
		root:                 newDirNode(),
		tornWriteProbability: tornWriteProbabilityDefault,
		fileChunkBytes:       memFileChunkBytes,
	}
}

func newDirNode() *memNode {
	return &memNode{children: map[string]*memNode{}, durableChildren: map[string]*memNode{}}
}

func newFileNode(chunkBytes int64) *memNode {
	assert(chunkBytes > 0, "memfs file chunk of %d bytes", chunkBytes)
	return &memNode{file: &memFile{content: memContent{chunkBytes: chunkBytes}}}
}

// ---- Fault and capacity configuration ----

// FailNext makes the next count operations of kind op fail with err (which
// typically wraps ErrIO or ErrNoSpace). It replaces an earlier FailNext for
// op; count 0 cancels it.
func (m *MemFS) FailNext(op FaultOp, err error, count int) {
	assert(op >= 0 && op < faultOpCount, "FailNext: unknown op %d", int(op))
	assert(count >= 0, "FailNext: count %d < 0", count)
	assert(err != nil || count == 0, "FailNext: nil error for %d %s ops", count, op)
	m.faults[op].nextErr = err
	m.faults[op].nextCount = count
	m.faults[op].nextMatch = nil
}

// FailNextMatching is FailNext for the operations whose path (a rename's
// source path) match accepts: the next count of those fail, the others
// proceed. The simulator aims a fault at one path this way (a segment's
// create, a move install's rename) rather than at whichever operation of
// the kind comes next.
func (m *MemFS) FailNextMatching(op FaultOp, err error, count int, match func(name string) bool) {
	m.FailNext(op, err, count)
	m.faults[op].nextMatch = match
}

// SetFailureProbability makes each operation of kind op fail with err with
// probability p, drawn from the MemFS's rng. p 0 turns it off.
func (m *MemFS) SetFailureProbability(op FaultOp, err error, p float64) {
	assert(op >= 0 && op < faultOpCount, "SetFailureProbability: unknown op %d", int(op))
	assert(p >= 0 && p <= 1, "SetFailureProbability: p %v outside [0, 1]", p)
	assert(err != nil || p == 0, "SetFailureProbability: nil error with p %v", p)
	m.faults[op].probabilityErr = err
	m.faults[op].probability = p
}

// ClearFaults removes every FailNext and SetFailureProbability rule.
func (m *MemFS) ClearFaults() {
	m.faults = [faultOpCount]memFaultRule{}
}

// SetCapacity bounds the total bytes of file contents; a write or truncate
// that would go beyond it fails with ErrNoSpace. 0 means unlimited.
func (m *MemFS) SetCapacity(bytes int64) {
	assert(bytes >= 0, "SetCapacity: %d bytes < 0", bytes)
	m.capacityBytes = bytes
}

// SetTornWriteProbability sets the chance, per file with an unsynced
// write that may tear (see MemFS), that a crash keeps part of that write.
// 0 makes crashes drop every unsynced byte.
func (m *MemFS) SetTornWriteProbability(p float64) {
	assert(p >= 0 && p <= 1, "SetTornWriteProbability: p %v outside [0, 1]", p)
	m.tornWriteProbability = p
}

// Stats returns the counters so far.
func (m *MemFS) Stats() MemFSStats {
	return m.stats
}

// injectFault returns the injected error for one operation of kind op on
// name, or nil if the operation should proceed.
func (m *MemFS) injectFault(op FaultOp, name string) error {
	rule := &m.faults[op]
	if rule.nextCount > 0 && (rule.nextMatch == nil || rule.nextMatch(name)) {
		rule.nextCount--
		m.stats.InjectedFaults++
		return rule.nextErr
	}
	if rule.probability > 0 && m.rng.Float64() < rule.probability {
		m.stats.InjectedFaults++
		return rule.probabilityErr
	}
	return nil
}

// reserve checks that node may grow by growthBytes within the capacity.
func (m *MemFS) reserve(node *memNode, growthBytes int64) error {
	if m.capacityBytes == 0 || growthBytes <= 0 || !m.reachable(node) {
		return nil
	}
	if m.usedBytes+growthBytes > m.capacityBytes {
		m.stats.NoSpaceErrors++
		return ErrNoSpace
	}
	return nil
}

// account records that node's size changed by deltaBytes.
func (m *MemFS) account(node *memNode, deltaBytes int64) {
	if m.reachable(node) {
		m.usedBytes += deltaBytes
		if m.usedBytes < 0 { // guarded: assert's arguments would allocate on every write
			assert(false, "memfs used bytes %d < 0 after a change of %d", m.usedBytes, deltaBytes)
		}
	}
}

// reachable reports whether node is in the current tree.
func (m *MemFS) reachable(node *memNode) bool {
	for ; node != m.root; node = node.parent {
		if node.parent == nil {
			return false
		}
	}
	return true
}

// ---- Paths ----

// cleanPath cleans name and checks it: relative, inside the root, and
// no element longer than FileNameBytesMax. The root is "". Its elements
// are read off with nextElement, so that resolving a path, which every
// file operation does, allocates no list of them.
func cleanPath(name string) (string, error) {
	clean := path.Clean(name)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", ErrBadPath
	}
	if clean == "." {
		return "", nil
	}
	for rest := clean; rest != ""; {
		var element string
		if element, rest = nextElement(rest); len(element) > FileNameBytesMax {
			return "", ErrNameTooLong
		}
	}
	return clean, nil
}

// nextElement splits a path cleanPath returned into its first element
// and the path after it ("" after the last).
func nextElement(clean string) (element, rest string) {
	element, rest, _ = strings.Cut(clean, "/")
	return element, rest
}

func memPathError(op, name string, err error) error {
	return fmt.Errorf("storage: memfs %s %q: %w", op, name, err)
}

// walk returns the node at a path cleanPath returned.
func (m *MemFS) walk(clean string) (*memNode, error) {
	node := m.root
	for rest := clean; rest != ""; {
		var element string
		element, rest = nextElement(rest)
		if node.file != nil {
			return nil, errMemNotDir
		}
		node = node.children[element]
		if node == nil {
			return nil, ErrNotExist
		}
	}
	return node, nil
}

// resolve returns the node at name.
func (m *MemFS) resolve(op, name string) (*memNode, error) {
	clean, err := cleanPath(name)
	if err != nil {
		return nil, memPathError(op, name, err)
	}
	node, err := m.walk(clean)
	if err != nil {
		return nil, memPathError(op, name, err)
	}
	return node, nil
}

// resolveDir returns the directory at name.
func (m *MemFS) resolveDir(op, name string) (*memNode, error) {
	node, err := m.resolve(op, name)
	if err == nil && node.file != nil {
		err = memPathError(op, name, errMemNotDir)
	}
	return node, err
}

// resolveParent returns the directory that holds name and name's last
// element. The root has no parent: it cannot be created, removed or
// renamed.
func (m *MemFS) resolveParent(op, name string) (*memNode, string, error) {
	clean, err := cleanPath(name)
	if err == nil && clean == "" {
		err = ErrBadPath
	}
	if err != nil {
		return nil, "", memPathError(op, name, err)
	}
	parentPath, base := "", clean
	if slash := strings.LastIndexByte(clean, '/'); slash >= 0 {
		parentPath, base = clean[:slash], clean[slash+1:]
	}
	parent, err := m.walk(parentPath)
	if err == nil && parent.file != nil {
		err = errMemNotDir
	}
	if err != nil {
		return nil, "", memPathError(op, name, err)
	}
	return parent, base, nil
}

// ---- Tree links ----

// link enters node into dir's current entries under name.
func link(dir *memNode, name string, node *memNode) {
	assert(node.parent == nil, "memfs link %q: node already linked as %q", name, node.name)
	assert(dir.children[name] == nil, "memfs link %q: entry already taken", name)
	dir.children[name] = node
	node.parent, node.name = dir, name
}

// unlink removes node from its directory's current entries.
func unlink(node *memNode) {
	assert(node.parent.children[node.name] == node, "memfs unlink %q: entry holds another node", node.name)
	delete(node.parent.children, node.name)
	node.parent, node.name = nil, ""
}

// linkDurable enters node into dir's durable entries under name.
func linkDurable(dir *memNode, name string, node *memNode) {
	assert(node.durableParent == nil, "memfs linkDurable %q: node already durable as %q", name, node.durableName)
	assert(dir.durableChildren[name] == nil, "memfs linkDurable %q: durable entry already taken", name)
	dir.durableChildren[name] = node
	node.durableParent, node.durableName = dir, name
}

// unlinkDurable removes node from its directory's durable entries.
func unlinkDurable(node *memNode) {
	dir := node.durableParent
	assert(dir.durableChildren[node.durableName] == node, "memfs unlinkDurable %q: entry holds another node", node.durableName)
	delete(dir.durableChildren, node.durableName)
	node.durableParent, node.durableName = nil, ""
}

// persistLocation makes node's current location its durable one. The
// node that held that durable slot before loses it; if that node now lives
// elsewhere (it was renamed away), its location is persisted too, so that
// a rename is never half durable. If the durable tree holds dir inside
// node (renames swapped their nesting), the renames on dir's durable path
// are persisted first, so that the durable tree never gets a cycle. Every
// step makes one more node's durable location equal its current one, and
// never undoes that for another node, so the recursion ends.
func persistLocation(node *memNode) {
	dir, name := node.parent, node.name
	assert(dir != nil, "memfs persisting the location of a removed node")
	if node.durableParent == dir && node.durableName == name {
		return
	}
	for node.file == nil && durablyWithin(dir, node) {
		persistLocation(firstMovedOnDurablePath(dir))
	}
	if node.durableParent != nil {
		unlinkDurable(node)
	}
	displaced := dir.durableChildren[name]
	if displaced != nil {
		unlinkDurable(displaced)
	}
	linkDurable(dir, name, node)
	if displaced != nil && displaced.parent != nil {
		persistLocation(displaced)
	}
}

// durablyWithin reports whether ancestor is dir or one of its durable
// ancestors.
func durablyWithin(dir, ancestor *memNode) bool {
	for ; dir != nil; dir = dir.durableParent {
		if dir == ancestor {
			return true
		}
	}
	return false
}

// firstMovedOnDurablePath returns the first node, from dir up its durable
// ancestors, whose durable location is not its current one. Called only
// when the durable path reaches a node that is not a current ancestor of
// dir, so such a node exists below it.
func firstMovedOnDurablePath(dir *memNode) *memNode {
	for ; dir.durableParent == dir.parent && dir.durableName == dir.name; dir = dir.durableParent {
		assert(dir.durableParent != nil, "memfs durable path without a moved node")
	}
	return dir
}

// sortedNames returns the keys of entries in name order.
func sortedNames(entries map[string]*memNode) []string {
	return appendSortedNames(make([]string, 0, len(entries)), entries) // sized once: collecting an iterator grew it step by step
}

// appendSortedNames appends the names of entries to names, sorted.
func appendSortedNames(names []string, entries map[string]*memNode) []string {
	start := len(names)
	for name := range entries { //determinism:ok sorted below
		names = append(names, name)
	}
	slices.Sort(names[start:])
	return names
}

// subtreeBytes returns the content length of node and everything below it.
func subtreeBytes(node *memNode) int64 {
	if node.file != nil {
		return node.file.content.size
	}
	var total int64
	for _, child := range node.children { //determinism:ok a sum does not depend on order
		total += subtreeBytes(child)
	}
	return total
}

// ---- FS methods ----

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	parent, base, err := m.resolveParent("create", name)
	if err != nil {
		return nil, err
	}
	if err := m.injectFault(FaultCreate, name); err != nil {
		return nil, memPathError("create", name, err)
	}
	node := parent.children[base]
	if node == nil {
		node = newFileNode(m.fileChunkBytes)
		link(parent, base, node)
	} else if node.file == nil {
		return nil, memPathError("create", name, errMemIsDir)
	}
	m.account(node, -node.file.content.size)
	node.file.truncate(0)
	return m.newHandle(node, name), nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	node, err := m.resolve("open", name)
	if err != nil {
		return nil, err
	}
	if err := m.injectFault(FaultOpen, name); err != nil {
		return nil, memPathError("open", name, err)
	}
	if node.file == nil {
		return nil, memPathError("open", name, errMemIsDir)
	}
	return m.newHandle(node, name), nil
}

func (m *MemFS) newHandle(node *memNode, name string) *memHandle {
	return &memHandle{fs: m, node: node, name: name, epoch: m.epoch}
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	parent, base, err := m.resolveParent("remove", name)
	if err != nil {
		return err
	}
	node := parent.children[base]
	if node == nil {
		return memPathError("remove", name, ErrNotExist)
	}
	if node.file == nil && len(node.children) > 0 {
		return memPathError("remove", name, fmt.Errorf("directory not empty: %w", ErrExist))
	}
	if err := m.injectFault(FaultRemove, name); err != nil {
		return memPathError("remove", name, err)
	}
	m.account(node, -subtreeBytes(node))
	unlink(node)
	return nil
}

// RemoveAll implements FS.
func (m *MemFS) RemoveAll(name string) error {
	parent, base, err := m.resolveParent("removeall", name)
	if errors.Is(err, ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	node := parent.children[base]
	if node == nil {
		return nil
	}
	if err := m.injectFault(FaultRemove, name); err != nil {
		return memPathError("removeall", name, err)
	}
	m.account(node, -subtreeBytes(node))
	unlink(node)
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldName, newName string) error {
	oldParent, oldBase, err := m.resolveParent("rename", oldName)
	if err != nil {
		return err
	}
	newParent, newBase, err := m.resolveParent("rename", newName)
	if err != nil {
		return err
	}
	if err := m.injectFault(FaultRename, oldName); err != nil {
		return memPathError("rename", oldName, err)
	}
	source := oldParent.children[oldBase]
	if source == nil {
		return memPathError("rename", oldName, ErrNotExist)
	}
	target := newParent.children[newBase]
	if err := checkRename(source, target, newParent); err != nil {
		return memPathError("rename", oldName+" to "+newName, err)
	}
	if target != source {
		m.replace(source, target, newParent, newBase)
	}
	m.stats.Renames++
	m.checkInvariantsIfEnabled()
	return nil
}

// checkRename returns why source cannot replace target (nil if absent) in
// newParent, or nil if it can.
func checkRename(source, target, newParent *memNode) error {
	for dir := newParent; dir != nil; dir = dir.parent {
		if dir == source {
			return errMemRenameIntoSelf
		}
	}
	switch {
	case target == nil || target == source:
		return nil
	case target.file == nil && source.file != nil:
		return errMemIsDir
	case target.file != nil && source.file == nil:
		return errMemNotDir
	case target.file == nil && len(target.children) > 0:
		return fmt.Errorf("directory not empty: %w", ErrExist)
	}
	return nil
}

// replace moves source to newParent/newBase, unlinking target if present.
func (m *MemFS) replace(source, target, newParent *memNode, newBase string) {
	if target != nil {
		m.account(target, -subtreeBytes(target))
		unlink(target)
	}
	unlink(source)
	link(newParent, newBase, source)
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(name string) error {
	clean, err := cleanPath(name)
	if err != nil {
		return memPathError("mkdir", name, err)
	}
	dir := m.root
	for rest := clean; rest != ""; {
		var element string
		element, rest = nextElement(rest)
		child := dir.children[element]
		if child == nil {
			child = newDirNode()
			link(dir, element, child)
		} else if child.file != nil {
			return memPathError("mkdir", name, errMemNotDir)
		}
		dir = child
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	node, err := m.resolveDir("list", dir)
	if err != nil {
		return nil, err
	}
	return sortedNames(node.children), nil
}

// Peek returns the current content of the file name without injecting
// any fault or touching its state: a checker's look at the disk, which
// must not consume the faults armed for the code under test.
func (m *MemFS) Peek(name string) ([]byte, error) {
	node, err := m.resolve("peek", name)
	if err != nil {
		return nil, err
	}
	if node.file == nil {
		return nil, memPathError("peek", name, errMemIsDir)
	}
	return node.file.content.bytes(0, node.file.content.size), nil
}

// FlipDurableByte is media corruption: it inverts the bits of the durable
// byte at offset of the file name (a crash keeps the flip), as a disk that
// lost a synced sector would. When the current byte there is the durable
// one, the current content shows the flip too; when an unsynced overwrite
// changed it, only the durable copy is flipped, so a later sync makes the
// overwrite durable intact. offset must lie within the durable content;
// the flip is not a write, so it leaves the file's sync state as it was.
func (m *MemFS) FlipDurableByte(name string, offset int64) error {
	return m.changeDurableBytes("flip", name, offset, offset+1, func(b byte) byte { return ^b })
}

// ZeroDurableRange is media damage too: the durable bytes [from, to) of
// the file name read as zeros, as a disk that never made a write leaves
// them, under the same rules as FlipDurableByte.
func (m *MemFS) ZeroDurableRange(name string, from, to int64) error {
	return m.changeDurableBytes("zero", name, from, to, func(byte) byte { return 0 })
}

// changeDurableBytes applies change to each durable byte of [from, to)
// of the file name: in the oldest undo record covering it, or in the
// content when the current byte is the durable one.
func (m *MemFS) changeDurableBytes(op, name string, from, to int64, change func(byte) byte) error {
	node, err := m.resolve(op, name)
	if err != nil {
		return err
	}
	if node.file == nil {
		return memPathError(op, name, errMemIsDir)
	}
	file := node.file
	if from < 0 || from >= to || to > min(file.durableSize, file.content.size) {
		return memPathError(op, name, fmt.Errorf("range [%d, %d) outside the durable content (%d bytes)", from, to, file.durableSize))
	}
	for offset := from; offset < to; offset++ {
		changeDurableByte(file, offset, change)
	}
	return nil
}

func changeDurableByte(file *memFile, offset int64, change func(byte) byte) {
	for _, record := range file.undo { // the oldest record covering offset holds its durable byte
		if at := offset - record.offset; at >= 0 && at < int64(len(record.old)) {
			record.old[at] = change(record.old[at])
			return
		}
	}
	file.content.overwrite([]byte{change(file.content.bytes(offset, offset+1)[0])}, offset)
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (FileInfo, error) {
	node, err := m.resolve("stat", name)
	if err != nil {
		return FileInfo{}, err
	}
	if node.file == nil {
		return FileInfo{IsDir: true}, nil
	}
	return FileInfo{Size: node.file.content.size}, nil
}

// SyncDir implements FS. It makes every entry change in dir durable:
// entries gone from dir lose their durable slot there (moving it to their
// new location if they were renamed away), and current entries take their
// durable slot in dir.
func (m *MemFS) SyncDir(dir string) error {
	node, err := m.resolveDir("syncdir", dir)
	if err != nil {
		return err
	}
	if err := m.injectFault(FaultSyncDir, dir); err != nil {
		return memPathError("syncdir", dir, err)
	}
	m.syncNames = appendSortedNames(m.syncNames[:0], node.durableChildren)
	for _, name := range m.syncNames {
		persistDeparture(node, node.durableChildren[name])
	}
	m.syncNames = appendSortedNames(m.syncNames[:0], node.children)
	for _, name := range m.syncNames {
		persistLocation(node.children[name])
	}
	clear(m.syncNames[:cap(m.syncNames)]) // it keeps no name of a node that may go
	m.stats.DirSyncs++
	m.checkInvariantsIfEnabled()
	return nil
}

// SyncGroup implements GroupSyncer: each file's Sync, then each
// directory's SyncDir, each subject to the faults injected for it; the
// first failure ends the group.
func (m *MemFS) SyncGroup(files []File, dirs []string) error {
	if err := syncEach(m, files, dirs); err != nil {
		return err
	}
	m.stats.GroupSyncs++
	return nil
}

// persistDeparture makes durable that child, durable in dir, has left it
// (removed, or renamed elsewhere); a child still in dir is left alone.
func persistDeparture(dir, child *memNode) {
	if child == nil || child.parent == dir {
		return
	}
	if child.parent == nil {
		unlinkDurable(child)
		return
	}
	persistLocation(child)
}

// ---- Crash ----

// Crash simulates a power loss: see MemFS for what survives. Torn tails
// are drawn from the MemFS's rng.
func (m *MemFS) Crash() {
	m.CrashWith(m.drawTorn)
}

// CrashWith is Crash with the torn writes chosen by keep instead of the
// rng: for each file with a write that may tear (see MemFS), in path
// order, keep(path, writeBytes) returns how many of the write's first
// bytes survive, in [0, writeBytes]. Property tests use it so that their
// shrinker controls the tear.
func (m *MemFS) CrashWith(keep func(path string, writeBytes int64) int64) {
	m.revertDir(m.root, ".", keep)
	m.epoch++
	m.stats.Crashes++
	m.usedBytes = subtreeBytes(m.root)
	m.checkInvariantsIfEnabled()
}

// CrashClone returns a copy of m as it would be after a Crash, with its
// own rng seeded from m's rng; m itself keeps its content and its open
// files. The copy keeps m's capacity, torn-write probability and stats,
// but no injected faults.
func (m *MemFS) CrashClone() *MemFS {
	clone := NewMemFS(rand.New(rand.NewPCG(m.rng.Uint64(), m.rng.Uint64())))
	clone.capacityBytes = m.capacityBytes
	clone.tornWriteProbability = m.tornWriteProbability
	clone.fileChunkBytes = m.fileChunkBytes
	clone.stats = m.stats
	clone.root = clone.cloneDurableDir(m.root, ".", clone.drawTorn)
	clone.stats.Crashes++
	clone.usedBytes = subtreeBytes(clone.root)
	clone.checkInvariantsIfEnabled()
	return clone
}

// DurableClone returns a copy of what m holds durably: m as after a crash
// that keeps no unsynced byte. m itself (its content, open files and rng)
// is unchanged, so a checker may look without changing a run. The copy
// has m's capacity, no injected faults, and fresh stats.
func (m *MemFS) DurableClone() *MemFS {
	clone := NewMemFS(rand.New(rand.NewPCG(0, 0)))
	clone.capacityBytes = m.capacityBytes
	clone.fileChunkBytes = m.fileChunkBytes
	clone.root = clone.cloneDurableDir(m.root, ".", keepNoUnsyncedByte)
	clone.usedBytes = subtreeBytes(clone.root)
	clone.checkInvariantsIfEnabled()
	return clone
}

// DurableCloneDir is DurableClone limited to the durable subtree of dir
// (and the directories that lead to it): what a check that opens only dir
// needs, without copying every other file. The copy's capacity is m's less
// the durable bytes outside dir, so that a write to it fails exactly when
// it would fail in a whole DurableClone; when those bytes alone fill m's
// capacity, it is the whole DurableClone.
func (m *MemFS) DurableCloneDir(dir string) *MemFS { return m.durableCloneDir(dir, false) }

// DurableCloneDirView is DurableCloneDir whose files share their bytes
// with m's instead of copying them: cheap, and valid only until m next
// changes (a checker's look within one step). Writes to the view never
// reach m: the view copies what it changes.
func (m *MemFS) DurableCloneDirView(dir string) *MemFS { return m.durableCloneDir(dir, true) }

func (m *MemFS) durableCloneDir(dir string, share bool) *MemFS {
	clean, err := cleanPath(dir)
	if err != nil || clean == "" {
		return m.DurableClone()
	}
	source := m.root
	for rest := clean; rest != ""; {
		var name string
		name, rest = nextElement(rest)
		if source = source.durableChildren[name]; source == nil || source.file != nil {
			return m.DurableClone() // no such durable directory: nothing to save
		}
	}
	var outsideBytes int64
	if m.capacityBytes > 0 { // a disk without a capacity has no use for the walk of its whole tree
		outsideBytes = durableBytes(m.root) - durableBytes(source)
		if m.capacityBytes-outsideBytes <= 0 {
			return m.DurableClone()
		}
	}
	clone := NewMemFS(rand.New(rand.NewPCG(0, 0)))
	clone.fileChunkBytes, clone.sharesContent = m.fileChunkBytes, share
	if m.capacityBytes > 0 {
		clone.capacityBytes = m.capacityBytes - outsideBytes
	}
	parent := clone.root
	for rest := clean; rest != ""; {
		var name string
		name, rest = nextElement(rest)
		var copied *memNode
		if rest == "" { // the last element: the directory itself
			copied = clone.cloneDurableDir(source, dir, keepNoUnsyncedByte)
		} else {
			copied = newDirNode()
		}
		link(parent, name, copied)
		linkDurable(parent, name, copied)
		parent = copied
	}
	clone.usedBytes = subtreeBytes(clone.root)
	clone.checkInvariantsIfEnabled()
	return clone
}

// durableBytes is the size of node's durable subtree as a crash that keeps
// no unsynced byte leaves it: each file's durable size.
func durableBytes(node *memNode) int64 {
	if node.file != nil {
		return node.file.durableSize
	}
	var total int64
	for _, child := range node.durableChildren { //determinism:ok a sum does not depend on order
		total += durableBytes(child)
	}
	return total
}

// keepNoUnsyncedByte is a crash's choice that tears every unsynced write
// away entirely.
func keepNoUnsyncedByte(string, int64) int64 { return 0 }

// drawTorn chooses how much of an unsynced write survives a crash.
func (m *MemFS) drawTorn(_ string, writeBytes int64) int64 {
	if m.tornWriteProbability == 0 || m.rng.Float64() >= m.tornWriteProbability {
		return 0
	}
	return 1 + m.rng.Int64N(writeBytes)
}

// revertDir makes dir's durable entries its current ones, recursively, and
// reverts every file below it, reusing the nodes in place.
func (m *MemFS) revertDir(dir *memNode, dirPath string, keep func(string, int64) int64) {
	dir.children = maps.Clone(dir.durableChildren)
	for _, name := range sortedNames(dir.children) {
		child := dir.children[name]
		child.parent, child.name = dir, name
		childPath := path.Join(dirPath, name)
		if child.file == nil {
			m.revertDir(child, childPath, keep)
			continue
		}
		prefixBytes, rebuilt := m.survivingContent(child.file, childPath, keep)
		if rebuilt != nil {
			child.file.content = *rebuilt
		} else {
			child.file.content.resize(prefixBytes)
		}
		child.file.sync()
	}
}

// cloneDurableDir returns a fresh copy of dir's durable subtree, crashed.
func (m *MemFS) cloneDurableDir(source *memNode, dirPath string, keep func(string, int64) int64) *memNode {
	dir := newDirNode()
	for _, name := range sortedNames(source.durableChildren) {
		child := source.durableChildren[name]
		childPath := path.Join(dirPath, name)
		var copied *memNode
		if child.file == nil {
			copied = m.cloneDurableDir(child, childPath, keep)
		} else {
			copied = &memNode{file: m.cloneCrashedFile(child.file, childPath, keep)}
		}
		link(dir, name, copied)
		linkDurable(dir, name, copied)
	}
	return dir
}

// cloneCrashedFile returns a fresh copy of what of file survives a crash.
func (m *MemFS) cloneCrashedFile(file *memFile, filePath string, keep func(string, int64) int64) *memFile {
	prefixBytes, rebuilt := m.survivingContent(file, filePath, keep)
	if rebuilt == nil && m.sharesContent {
		prefix := file.content.sharePrefix(prefixBytes)
		rebuilt = &prefix
	} else if rebuilt == nil {
		prefix := file.content.clonePrefix(prefixBytes)
		rebuilt = &prefix
	}
	clone := &memFile{content: *rebuilt}
	clone.sync()
	return clone
}

// survivingContent returns what of file survives a crash: either a prefix
// of its current content, prefixBytes long (rebuilt is nil), or rebuilt
// content. file itself is not changed.
func (m *MemFS) survivingContent(file *memFile, filePath string, keep func(string, int64) int64) (prefixBytes int64, rebuilt *memContent) {
	unsyncedBytes := file.content.size - file.durableSize
	if len(file.undo) == 0 && unsyncedBytes == 0 {
		return file.content.size, nil
	}
	m.stats.UnsyncedFiles++
	if len(file.undo) > 0 {
		return 0, m.tearOverwrite(file, filePath, keep)
	}
	return file.durableSize + m.keptBytes(filePath, unsyncedBytes, keep), nil
}

// tearOverwrite returns the durable content of a file whose durable bytes
// changed, with a prefix of its last overwrite kept.
func (m *MemFS) tearOverwrite(file *memFile, filePath string, keep func(string, int64) int64) *memContent {
	content := file.durableContent()
	last := file.lastOverwrite
	if last.length == 0 {
		return &content
	}
	assert(last.end() <= min(file.durableSize, file.content.size),
		"memfs %q: last overwrite %+v outside durable %d or current %d bytes", filePath, last, file.durableSize, file.content.size)
	keptBytes := m.keptBytes(filePath, last.length, keep)
	content.overwrite(file.content.bytes(last.offset, last.offset+keptBytes), last.offset)
	return &content
}

// keptBytes asks keep how much of a write of writeBytes survives.
func (m *MemFS) keptBytes(filePath string, writeBytes int64, keep func(string, int64) int64) int64 {
	keptBytes := keep(filePath, writeBytes)
	assert(keptBytes >= 0 && keptBytes <= writeBytes,
		"memfs crash of %q: kept %d of a %d-byte write", filePath, keptBytes, writeBytes)
	if keptBytes > 0 && keptBytes < writeBytes {
		m.stats.TornWrites++
	}
	return keptBytes
}

// ---- File content ----

// durableContent returns a fresh copy of the durable content.
func (f *memFile) durableContent() memContent {
	content := f.content.clonePrefix(min(f.durableSize, f.content.size))
	content.resize(f.durableSize)
	for i := len(f.undo) - 1; i >= 0; i-- {
		content.overwrite(f.undo[i].old, f.undo[i].offset)
	}
	return content
}

// saveDurable records the durable bytes in [start, end) that are about to
// change, unless an earlier record already holds them.
func (f *memFile) saveDurable(start, end int64) {
	end = min(end, f.durableSize, f.content.size)
	if start >= end {
		return
	}
	for _, record := range f.undo {
		if record.offset <= start && record.offset+int64(len(record.old)) >= end {
			return
		}
	}
	f.undo = append(f.undo, memUndo{offset: start, old: f.content.bytes(start, end)})
}

// writeAt copies p into the content at off, growing it with zeros if off
// is past the end.
func (f *memFile) writeAt(p []byte, off int64) {
	if len(p) == 0 { // guarded: assert's arguments would allocate on every write
		assert(false, "memfs empty write at %d reached the content", off)
	}
	f.saveDurable(off, off+int64(len(p)))
	if off < f.durableSize {
		f.lastOverwrite = memRange{offset: off, length: min(int64(len(p)), f.durableSize-off)}
	}
	if off > f.content.size {
		f.content.appendZeros(off - f.content.size)
	}
	overlapBytes := min(int64(len(p)), f.content.size-off)
	f.content.overwrite(p[:overlapBytes], off)
	f.content.append(p[overlapBytes:])
}

// truncate cuts or extends (with zeros) the content to size bytes.
func (f *memFile) truncate(size int64) {
	f.saveDurable(size, f.content.size)
	f.lastOverwrite.length = max(0, min(f.lastOverwrite.length, size-f.lastOverwrite.offset))
	f.content.resize(size)
}

// sync makes the current content durable.
func (f *memFile) sync() {
	f.durableSize = f.content.size
	f.undo = nil
	f.lastOverwrite = memRange{}
}

// readAt copies the content from off into p and returns how many bytes it
// copied, fewer than len(p) only at the end of the content.
func (c *memContent) readAt(p []byte, off int64) int {
	copied := 0
	for copied < len(p) && off < c.size {
		n := copy(p[copied:], c.chunks[off/c.chunkBytes][off%c.chunkBytes:])
		copied += n
		off += int64(n)
	}
	return copied
}

// bytes returns a copy of the content in [start, end).
func (c *memContent) bytes(start, end int64) []byte {
	out := make([]byte, end-start)
	n := c.readAt(out, start)
	assert(n == len(out), "memfs copy of [%d, %d) beyond %d bytes", start, end, c.size)
	return out
}

// overwrite copies p into the content at off, within its current size.
func (c *memContent) overwrite(p []byte, off int64) {
	if off < 0 || off+int64(len(p)) > c.size { // guarded: assert's arguments would allocate on every write
		assert(false, "memfs overwrite of [%d, %d) beyond %d bytes", off, off+int64(len(p)), c.size)
	}
	if c.shared && len(p) > 0 {
		for i, chunk := range c.chunks {
			c.chunks[i] = slices.Clone(chunk)
		}
		c.shared = false
	}
	for len(p) > 0 {
		n := copy(c.chunks[off/c.chunkBytes][off%c.chunkBytes:], p)
		p = p[n:]
		off += int64(n)
	}
}

// append adds p at the end of the content.
func (c *memContent) append(p []byte) {
	for len(p) > 0 {
		last := c.lastChunkWithRoom()
		n := min(len(p), int(c.chunkBytes)-len(c.chunks[last]))
		c.chunks[last] = append(c.chunks[last], p[:n]...)
		p = p[n:]
		c.size += int64(n)
	}
}

// appendZeros adds count zero bytes at the end of the content.
func (c *memContent) appendZeros(count int64) {
	for count > 0 {
		last := c.lastChunkWithRoom()
		chunk := c.chunks[last]
		n := min(count, c.chunkBytes-int64(len(chunk)))
		chunk = slices.Grow(chunk, int(n))[:len(chunk)+int(n)]
		clear(chunk[len(chunk)-int(n):])
		c.chunks[last] = chunk
		count -= n
		c.size += n
	}
}

// lastChunkWithRoom returns the index of the last chunk, adding a chunk if
// the last one is full. The first chunk starts empty and grows by append,
// so that small files stay small; later chunks are allocated whole.
func (c *memContent) lastChunkWithRoom() int {
	if len(c.chunks) == 0 || int64(len(c.chunks[len(c.chunks)-1])) == c.chunkBytes {
		var chunk []byte
		if len(c.chunks) > 0 {
			chunk = make([]byte, 0, c.chunkBytes)
		}
		c.chunks = append(c.chunks, chunk)
	}
	return len(c.chunks) - 1
}

// resize cuts the content, or extends it with zeros, to size bytes.
func (c *memContent) resize(size int64) {
	if size >= c.size {
		c.appendZeros(size - c.size)
		return
	}
	count := (size + c.chunkBytes - 1) / c.chunkBytes
	clear(c.chunks[count:]) // let the dropped chunks be collected
	c.chunks = c.chunks[:count]
	if count > 0 {
		kept := size - (count-1)*c.chunkBytes
		c.chunks[count-1] = c.chunks[count-1][:kept]
		if c.shared {
			c.chunks[count-1] = c.chunks[count-1][:kept:kept] // an append after the cut reallocates
		}
	}
	c.size = size
}

// sharePrefix returns the first size bytes of the content as a content
// that shares c's chunks (shared, each capped at its length).
func (c *memContent) sharePrefix(size int64) memContent {
	assert(size <= c.size, "memfs share of %d bytes of a %d-byte content", size, c.size)
	share := memContent{chunkBytes: c.chunkBytes, shared: true, size: size}
	for i := 0; int64(i)*c.chunkBytes < size; i++ {
		n := min(int64(len(c.chunks[i])), size-int64(i)*c.chunkBytes)
		share.chunks = append(share.chunks, c.chunks[i][:n:n])
	}
	return share
}

// clonePrefix returns a copy of the first size bytes of the content.
func (c *memContent) clonePrefix(size int64) memContent {
	assert(size <= c.size, "memfs clone of %d bytes of a %d-byte content", size, c.size)
	clone := memContent{chunkBytes: c.chunkBytes}
	for i := 0; clone.size < size; i++ {
		chunk := c.chunks[i]
		clone.append(chunk[:min(int64(len(chunk)), size-clone.size)])
	}
	return clone
}

// ---- File methods ----

// live returns the file content, or ErrClosed if the handle was closed or
// a crash killed it.
func (h *memHandle) live(op string) (*memFile, error) {
	if h.closed || h.epoch != h.fs.epoch {
		return nil, memPathError(op, h.name, ErrClosed)
	}
	return h.node.file, nil
}

// ReadAt implements io.ReaderAt.
func (h *memHandle) ReadAt(p []byte, off int64) (int, error) {
	file, err := h.live("read")
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, memPathError("read", h.name, errMemNegativeOffset)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := h.fs.injectFault(FaultRead, h.name); err != nil {
		return 0, memPathError("read", h.name, err)
	}
	if off >= file.content.size {
		return 0, io.EOF
	}
	n := file.content.readAt(p, off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write implements File: it appends p.
func (h *memHandle) Write(p []byte) (int, error) {
	file, err := h.live("write")
	if err != nil {
		return 0, err
	}
	return h.write("write", file, p, file.content.size)
}

// WriteAt implements File.
func (h *memHandle) WriteAt(p []byte, off int64) (int, error) {
	file, err := h.live("writeat")
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, memPathError("writeat", h.name, errMemNegativeOffset)
	}
	return h.write("writeat", file, p, off)
}

// write stores p at off, after the fault and capacity checks. Like
// os.File, an empty write does nothing, even past the end.
func (h *memHandle) write(op string, file *memFile, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := h.fs.injectFault(FaultWrite, h.name); err != nil {
		return 0, memPathError(op, h.name, err)
	}
	growthBytes := max(0, off+int64(len(p))-file.content.size)
	if err := h.fs.reserve(h.node, growthBytes); err != nil {
		return 0, memPathError(op, h.name, err)
	}
	file.writeAt(p, off)
	h.fs.account(h.node, growthBytes)
	h.fs.stats.Writes++
	h.fs.stats.WrittenBytes += int64(len(p))
	return len(p), nil
}

// Truncate implements File.
func (h *memHandle) Truncate(size int64) error {
	file, err := h.live("truncate")
	if err != nil {
		return err
	}
	if size < 0 {
		return memPathError("truncate", h.name, errMemNegativeOffset)
	}
	if err := h.fs.injectFault(FaultWrite, h.name); err != nil {
		return memPathError("truncate", h.name, err)
	}
	deltaBytes := size - file.content.size
	if err := h.fs.reserve(h.node, deltaBytes); err != nil {
		return memPathError("truncate", h.name, err)
	}
	file.truncate(size)
	h.fs.account(h.node, deltaBytes)
	h.fs.stats.Truncates++
	return nil
}

// Sync implements File.
func (h *memHandle) Sync() error {
	file, err := h.live("sync")
	if err != nil {
		return err
	}
	if err := h.fs.injectFault(FaultSync, h.name); err != nil {
		return memPathError("sync", h.name, err)
	}
	file.sync()
	h.fs.stats.Syncs++
	return nil
}

// Size implements File.
func (h *memHandle) Size() (int64, error) {
	file, err := h.live("size")
	if err != nil {
		return 0, err
	}
	return file.content.size, nil
}

// Close implements File.
func (h *memHandle) Close() error {
	if _, err := h.live("close"); err != nil {
		return err
	}
	h.closed = true
	return nil
}

// ---- Costly invariant checks ----

// checkInvariants walks the whole tree and asserts the invariants of every
// node: links in both directions, each node reachable at most once in the
// current tree and in the durable tree, file bookkeeping, and usedBytes.
// It runs after every directory change and crash when built with
// -tags invariants, and tests call it directly.
func (m *MemFS) checkInvariants() {
	usedBytes := checkCurrentDir(m.root, map[*memNode]bool{})
	assert(usedBytes == m.usedBytes, "memfs used bytes %d, files hold %d", m.usedBytes, usedBytes)
	checkDurableDir(m.root, map[*memNode]bool{})
}

// checkInvariantsIfEnabled runs checkInvariants in -tags invariants builds.
func (m *MemFS) checkInvariantsIfEnabled() {
	if invariantsEnabled {
		m.checkInvariants()
	}
}

// checkCurrentDir checks dir's current subtree and returns its file bytes.
func checkCurrentDir(dir *memNode, seen map[*memNode]bool) int64 {
	var total int64
	for _, name := range sortedNames(dir.children) {
		child := dir.children[name]
		assert(child.parent == dir && child.name == name, "memfs entry %q does not point back to its directory", name)
		assert(!seen[child], "memfs node current under two names, one %q", name)
		seen[child] = true
		if child.file != nil {
			checkFile(child.file, name)
			total += child.file.content.size
		} else {
			total += checkCurrentDir(child, seen)
		}
	}
	return total
}

// checkDurableDir checks dir's durable subtree.
func checkDurableDir(dir *memNode, seen map[*memNode]bool) {
	for _, name := range sortedNames(dir.durableChildren) {
		child := dir.durableChildren[name]
		assert(child.durableParent == dir && child.durableName == name, "memfs durable entry %q does not point back", name)
		assert(!seen[child], "memfs node durable under two names, one %q", name)
		seen[child] = true
		if child.file == nil {
			checkDurableDir(child, seen)
		}
	}
}

// checkFile checks the bookkeeping of one file's content.
func checkFile(file *memFile, name string) {
	assert(file.durableSize >= 0, "memfs %q: durable size %d < 0", name, file.durableSize)
	checkContent(&file.content, name)
	assert(len(file.undo) > 0 || file.content.size >= file.durableSize,
		"memfs %q: no undo records but %d bytes < durable %d", name, file.content.size, file.durableSize)
	for _, record := range file.undo {
		assert(record.offset >= 0 && record.offset+int64(len(record.old)) <= file.durableSize,
			"memfs %q: undo at %d of %d bytes beyond durable %d", name, record.offset, len(record.old), file.durableSize)
	}
	last := file.lastOverwrite
	assert(last.length == 0 || (len(file.undo) > 0 && last.end() <= min(file.durableSize, file.content.size)),
		"memfs %q: last overwrite %+v with %d undo records, durable %d, current %d bytes",
		name, last, len(file.undo), file.durableSize, file.content.size)
}

// checkContent checks the chunk layout of a content.
func checkContent(content *memContent, name string) {
	wantChunks := (content.size + content.chunkBytes - 1) / content.chunkBytes
	assert(int64(len(content.chunks)) == wantChunks, "memfs %q: %d chunks for %d bytes of %d-byte chunks",
		name, len(content.chunks), content.size, content.chunkBytes)
	var total int64
	for i, chunk := range content.chunks {
		assert(i == len(content.chunks)-1 || int64(len(chunk)) == content.chunkBytes,
			"memfs %q: chunk %d of %d holds %d bytes", name, i, len(content.chunks), len(chunk))
		total += int64(len(chunk))
	}
	assert(total == content.size, "memfs %q: chunks hold %d bytes, size %d", name, total, content.size)
}
