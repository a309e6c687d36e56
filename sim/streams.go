package sim

// The random streams of a run. Every draw of the simulator comes from
// newRand(seed, stream) with one of these numbers, so that the draws of
// one part of a run move no draw of another: a new fault draws from a
// stream of its own and leaves every other part's trace as it was. Each
// number is used by one part only (TestStreamNumbersAreDistinct); the
// per-node streams take perNodeStreamSpan numbers from their base.
const (
	// workloadStream: the producers and consumers (World.workloadRng).
	workloadStream = 1
	// networkStream: the clients' network (World.networkRng).
	networkStream = 2
	// faultStream: the fault profile's schedule (World.faultRng).
	faultStream = 3
	// peerStream: the peer links (World.peerRng).
	peerStream = 4
	// moveStream: the moves scenario and the faults aimed at a move's
	// phases (World.moveRng).
	moveStream = 5
	// usersStream: the users scenario.
	usersStream = 6
	// lateProposalStream: the late and repeated metastore proposals.
	lateProposalStream = 7
	// controlStream: the operator of the control-plane checker.
	controlStream = 8
	// sitesStream: whether the core's fault sites are on and how often
	// they fire.
	sitesStream = 9
	// caughtUpKillStream: the caught-up source cuts and kills, the frozen
	// source kills and the destination blips of the move faults.
	caughtUpKillStream = 10
	// mediaStream: the media corruption of the simulated disks.
	mediaStream = 11
	// deadLettersStream: the dead-letter scenario.
	deadLettersStream = 41
	// movesFanoutStream: whether a moves world gets the fan-out scenario.
	movesFanoutStream = 42
	// installCrashStream: the crashes between an install's renames.
	installCrashStream = 43
	// weatherStream: whether a moves world has weather, and its lulls.
	weatherStream = 44
	// groupSyncStream: whether the nodes run a Ready's partition rounds
	// together (node.RunTogether), as the host does with group sync on.
	groupSyncStream = 45
	// readFaultStream: the open, read and remove failures armed beside a
	// write failure.
	readFaultStream = 46
	// namespaceFaultStream: the create, rename and directory-sync
	// failures armed beside a write failure.
	namespaceFaultStream = 47
	// clockSkewStream: whether a cluster's nodes run on skewed clocks,
	// and each start's offset.
	clockSkewStream = 48
	// hwmEagerStream: whether the nodes write their hwm files with every
	// round while they evict logs.
	hwmEagerStream = 49
	// warmReopenStream: whether the nodes keep the logs they close for a
	// warm reopen.
	warmReopenStream = 50
	// segmentIndexStream: whether the nodes' logs keep index files of
	// their sealed segments.
	segmentIndexStream = 51
	// residentPositionsStream: how many bytes of sealed segments'
	// positions the nodes' logs keep in memory.
	residentPositionsStream = 52
	// diskPressureStream: whether and when nodes run short of disk
	// (disk_pressure.go).
	diskPressureStream = 53
	// lateSyncStream: whether the nodes run a Ready's partition rounds
	// late (simNode.runSyncsLate), and when in each round.
	lateSyncStream = 54
	// memFSStream: the base of the simulated disks' streams (one per
	// node: memFSStream plus the node's index).
	memFSStream = 100
	// handleKeyStream: the base of the receipt handle keys' streams (one
	// per node, mixed with the node's incarnation in the seed).
	handleKeyStream = 1_000
)

// perNodeStreamSpan is how many numbers a per-node stream base reserves:
// a world has fewer nodes than this.
const perNodeStreamSpan = 100

// singleStreams and perNodeStreamBases list the streams above, for the
// test that keeps them apart; TestEveryRandomStreamIsListed reads the
// source to hold these lists to the block and every newRand call to a
// constant of it.
var (
	singleStreams = []uint64{workloadStream, networkStream, faultStream, peerStream, moveStream, usersStream,
		lateProposalStream, controlStream, sitesStream, caughtUpKillStream, mediaStream, deadLettersStream, movesFanoutStream,
		installCrashStream, weatherStream, groupSyncStream, readFaultStream, namespaceFaultStream, clockSkewStream,
		hwmEagerStream, warmReopenStream, segmentIndexStream, residentPositionsStream, diskPressureStream,
		lateSyncStream}
	perNodeStreamBases = []uint64{memFSStream, handleKeyStream}
)
