package sim

import (
	"bytes"
	"math/rand/v2"
	"path"
	"strings"

	"narad/msg"
	"narad/node"
	"narad/storage"
)

// Media corruption: a synced byte of a partition's log goes bad while its
// node is down, as on a disk that lost a sector. The byte is in a frame
// below the log's persisted high-watermark, followed by a valid frame of
// the same segment, so recovery reports the frame as corrupt in the
// middle and the node skips its offset forever (storage/doc.go,
// Recovery): consumes pass over it, a replay of it is answered 410. In a
// segment recovery takes from its index file, the read finds it instead
// (storage/doc.go, Segment index files), with the same answers. The
// record the frame held is lost by the fault, not by the broker, so the
// no-loss checker excuses that record only if every placement it was
// acknowledged at was hit (history.excused), and the replayer skips
// exactly that offset; every other record stays checked.
const (
	// mediaCorruptRunPercent of the runs with disk faults (profiles disk
	// and all) get media corruption at all.
	mediaCorruptRunPercent = 30
	// mediaCorruptStartPercent is the chance, in those runs, that a start
	// of the node during the safety phase finds one flipped byte.
	mediaCorruptStartPercent = 40
	// mediaCorruptRecentFrames: the flip hits one of the last frames
	// eligible, most likely not consumed yet, so a consume meets it.
	mediaCorruptRecentFrames = 8
	// mediaZeroPercent of the faults zero the last frames of a partition's
	// active segment to the end of its file instead, when they all lie
	// below its persisted high-watermark: writes the disk never made read
	// as zeros, which recovery must tell from the zero tail it writes
	// ahead (storage/doc.go) and keep as corrupt, handing none of their
	// offsets out again.
	mediaZeroPercent = 30
	// mediaZeroFramesMax bounds the frames one such fault zeroes.
	mediaZeroFramesMax = 3
	// mediaIndexedPercent of the flips, in runs whose logs keep segment
	// index files, hit a frame of a sealed segment that has one instead:
	// recovery then takes the segment from its index and does not see the
	// damage, which a read (ErrCorrupt) or a move's verification of the
	// source (storage.Log.VerifySegments) must find.
	mediaIndexedPercent = 40
)

// mediaFaults is the media corruption of a run.
type mediaFaults struct {
	w   *World
	rng *rand.Rand
	// on: the run drew media corruption.
	on bool
	// hit holds the offsets the fault made unreadable, by partition of
	// the simulated topic; only corrupt adds to it.
	hit map[int]map[uint64]bool
}

func newMediaFaults(w *World) *mediaFaults {
	rng := newRand(w.opts.Seed, mediaStream)
	drawn := rng.IntN(100) < mediaCorruptRunPercent
	on := drawn && mediaFaultsApply(w.opts)
	return &mediaFaults{w: w, rng: rng, on: on, hit: map[int]map[uint64]bool{}}
}

// mediaFaultsApply reports whether runs of opts may draw media corruption:
// worlds with disk faults (profiles disk and all) of one node, with or
// without the fan-out scenario, or, with MediaInClusters (the default), of
// three nodes with the moves scenario. A sweep of single-node runs without fan-out must reach
// ExpectedSingleNodeMarks (singleNodeMediaSweep).
func mediaFaultsApply(opts Options) bool {
	profile := opts.Faults.Name
	world := opts.Nodes == 1 || opts.Nodes == 3 && opts.Moves && opts.MediaInClusters
	return world && (profile == ProfileDisk.Name || profile == ProfileAll.Name)
}

// singleNodeMediaSweep reports whether a sweep of runs of opts must reach
// the mark of a skipped corrupt record: in a cluster a start meets a
// partition it owns less often, and fan-out runs were never held to it.
func singleNodeMediaSweep(opts Options) bool {
	return mediaFaultsApply(opts) && opts.Nodes == 1 && !opts.Fanout
}

// unreadable reports whether the fault made an offset of the simulated
// topic unreadable.
func (m *mediaFaults) unreadable(partition int, offset uint64) bool {
	return m != nil && m.hit[partition][offset]
}

// beforeStart may flip a byte of n's disk before n recovers from it.
func (m *mediaFaults) beforeStart(n *simNode) {
	if m == nil || !m.on || !m.w.drawsFaults() || m.rng.IntN(100) >= mediaCorruptStartPercent {
		return
	}
	partition := m.rng.IntN(m.w.partitions)
	if m.w.clustered() && m.w.metaLog.owner(m.w.topic, partition) != n.id {
		return // only the owner's copy holds the records a client reads
	}
	dir, frameBytesMax := node.PartitionDir(m.w.topic, partition), n.config().Log.FrameBytesMax
	if m.rng.IntN(100) < mediaZeroPercent && m.zeroLastFrames(n, partition, dir, frameBytesMax) {
		return
	}
	frames := m.eligibleFrames(n.fs, dir, frameBytesMax)
	if len(frames) == 0 {
		return
	}
	if m.w.segmentIndexes && m.rng.IntN(100) < mediaIndexedPercent {
		if indexed := indexedFrames(n.fs, frames); len(indexed) > 0 {
			frames = indexed
		}
	}
	recent := frames[max(0, len(frames)-mediaCorruptRecentFrames):]
	m.corrupt(n, partition, recent[m.rng.IntN(len(recent))])
}

// indexedFrames keeps the frames whose segment file has an index file
// beside it (storage's segment index files, named as the segment with
// .index for .log).
func indexedFrames(fs *storage.MemFS, frames []mediaFrame) []mediaFrame {
	var indexed []mediaFrame
	for _, frame := range frames {
		if _, err := fs.Stat(strings.TrimSuffix(frame.file, ".log") + ".index"); err == nil {
			indexed = append(indexed, frame)
		}
	}
	return indexed
}

// mediaFrame is a frame the fault may hit: its segment file, its byte
// range there, and the id its record holds.
type mediaFrame struct {
	file           string
	position, size int64
	offset         uint64
	id             string
}

// eligibleFrames lists, in offset order, the frames of dir below its
// persisted high-watermark that another valid frame of the same segment
// follows (below it too), holding a record of a known id.
func (m *mediaFaults) eligibleFrames(fs *storage.MemFS, dir string, frameBytesMax int) []mediaFrame {
	persisted, ok, err := storage.PersistedHWM(fs, dir)
	if err != nil || !ok {
		return nil
	}
	var frames []mediaFrame
	for _, file := range segmentFiles(fs, dir) {
		frames = append(frames, m.segmentFrames(fs, file, persisted, frameBytesMax)...)
	}
	return frames
}

// segmentFiles lists the segment files of dir in offset order (segment
// names sort by base); nil if it cannot be listed.
func segmentFiles(fs *storage.MemFS, dir string) []string {
	names, err := fs.List(dir)
	if err != nil {
		return nil
	}
	var files []string
	for _, name := range names {
		if path.Ext(name) == ".log" {
			files = append(files, path.Join(dir, name))
		}
	}
	return files
}

// segmentFrames lists the eligible frames of one segment file.
func (m *mediaFaults) segmentFrames(fs *storage.MemFS, file string, persisted uint64, frameBytesMax int) []mediaFrame {
	data, err := storage.ReadFile(fs, file)
	if err != nil {
		return nil
	}
	frames, _ := m.decodeFrames(file, data, frameBytesMax)
	below := 0
	for below < len(frames) && frames[below].offset < persisted {
		below++
	}
	frames = frames[:max(below-1, 0)] // no valid frame below the high-watermark follows the last one
	known := frames[:0]
	for _, frame := range frames {
		if frame.id != "" {
			known = append(known, frame)
		}
	}
	return known
}

// decodeFrames lists the valid frames at the start of a segment file's
// data, in order, and the position where they end.
func (m *mediaFaults) decodeFrames(file string, data []byte, frameBytesMax int) (frames []mediaFrame, end int) {
	for end < len(data) {
		offset, envelope, size, err := storage.DecodeFrame(data[end:], frameBytesMax)
		if err != nil {
			break
		}
		frames = append(frames, mediaFrame{file: file, position: int64(end), size: int64(size), offset: offset, id: m.recordID(envelope)})
		end += size
	}
	return frames, end
}

// recordID is the id of the simulated record an envelope holds, "" if it
// holds none a client produced.
func (m *mediaFaults) recordID(envelope []byte) string {
	record, err := storage.DecodeRecord(envelope)
	if err != nil {
		return ""
	}
	id := idOfPayload(string(record.Payload))
	if _, produced := m.w.history.firstCallMs[id]; !produced {
		return ""
	}
	return id
}

// excuse records that the fault made frame's offset unreadable and
// excuses its record.
func (m *mediaFaults) excuse(partition int, frame mediaFrame) {
	if m.hit[partition] == nil {
		m.hit[partition] = map[uint64]bool{}
	}
	m.hit[partition][frame.offset] = true
	m.w.history.excuseCorrupt(frame.id, msg.Placement{Partition: partition, Offset: frame.offset})
}

// corrupt flips the last byte of the frame (its record's last byte, under
// the frame's checksum) and excuses its record.
func (m *mediaFaults) corrupt(n *simNode, partition int, frame mediaFrame) {
	if err := n.fs.FlipDurableByte(frame.file, frame.position+frame.size-1); err != nil {
		m.w.fail("media-fault", "%s: flipping a byte of %s: %v", n.id, frame.file, err)
		return
	}
	m.excuse(partition, frame)
	m.w.countFault("media-corrupt")
	m.w.tracef("media fault: %s offset %d of partition %d (record %s) is corrupt on %s's disk", frame.file, frame.offset, partition, frame.id, n.id)
}

// zeroLastFrames zeroes the last frames of dir's active segment to the
// end of its file and excuses their records, if the segment's valid
// frames end exactly at the persisted high-watermark (none above it, whose
// loss recovery could not see) and only zeros follow them; false if it
// zeroed nothing.
func (m *mediaFaults) zeroLastFrames(n *simNode, partition int, dir string, frameBytesMax int) bool {
	persisted, ok, err := storage.PersistedHWM(n.fs, dir)
	if err != nil || !ok {
		return false
	}
	files := segmentFiles(n.fs, dir)
	if len(files) == 0 {
		return false
	}
	active := files[len(files)-1]
	data, err := storage.ReadFile(n.fs, active)
	if err != nil {
		return false
	}
	frames, end := m.decodeFrames(active, data, frameBytesMax)
	if len(frames) == 0 || frames[len(frames)-1].offset+1 != persisted || len(bytes.TrimRight(data[end:], "\x00")) > 0 {
		return false
	}
	chosen := frames[len(frames)-1-m.rng.IntN(min(mediaZeroFramesMax, len(frames))):]
	for _, frame := range chosen {
		if frame.id == "" {
			return false
		}
	}
	if err := n.fs.ZeroDurableRange(active, chosen[0].position, int64(len(data))); err != nil {
		m.w.fail("media-fault", "%s: zeroing the end of %s: %v", n.id, active, err)
		return false
	}
	for _, frame := range chosen {
		m.excuse(partition, frame)
	}
	m.w.countFault("media-zeroed")
	m.w.tracef("media fault: %s offsets %d to %d of partition %d read as zeros on %s's disk", active, chosen[0].offset, persisted-1, partition, n.id)
	return true
}
