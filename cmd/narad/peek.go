package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"narad/client"
	"narad/proc"
)

// peekCursor is the next offset to read in one partition.
type peekCursor struct {
	partition int
	// next is the next offset to read; meaningful only when ready.
	next int64
	// ready is false until the partition's stats were available, so the
	// starting offset is known.
	ready bool
	// end is the partition's high watermark at the last read of the
	// stats, known when its owner answered then: a sweep reads only the
	// partitions with records past their cursor, or whose end is unknown,
	// so an idle peek of many partitions costs one describe per pause,
	// not a replay read of each.
	end      int64
	endKnown bool
	// skipped is the run of offsets 410s made the cursor skip, said when
	// a read does not skip (or the peek ends).
	skipped skipRun
}

// peekSession is one run of sub --peek.
type peekSession struct {
	app      *app
	broker   *client.Client
	topic    string
	options  subOptions
	printer  messagePrinter
	cursors  []peekCursor
	received int
	// failing is the last replay failure not followed by a read that
	// succeeded: an interrupt while the broker cannot be read is not a
	// clean end. reportedAt is when a failure was last printed (at most
	// one line per consumeRetryDelay), suppressed the failures not
	// printed since.
	failing    error
	reportedAt time.Time
	suppressed int
}

// peek tails every partition (or one) with replay reads until --max or
// Ctrl-C. Cursors start at each partition's high watermark, or --from.
func (a *app) peek(ctx context.Context, broker *client.Client, topic string, options subOptions) error {
	session := &peekSession{app: a, broker: broker, topic: topic, options: options,
		printer: a.newMessagePrinter(options.raw)}
	if err := session.start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "peeking at %s (read-only; Ctrl-C to stop)\n", topic)
	err := session.loop(ctx)
	for i := range session.cursors {
		a.saySkipped(session.cursors[i].partition, session.cursors[i].skipped.end())
	}
	fmt.Fprintf(a.stderr, "%d message(s)\n", session.received)
	if ctx.Err() != nil && session.failing != nil {
		return fmt.Errorf("stopped while replays were failing: %w", session.failing)
	}
	if ctx.Err() != nil {
		return nil // interrupted: a normal end
	}
	return err
}

// start reads the partition stats and places the cursors.
func (s *peekSession) start(ctx context.Context) error {
	stats, err := s.partitionStats(ctx)
	if err != nil {
		return err
	}
	for _, stat := range stats {
		s.cursors = append(s.cursors, peekCursor{partition: stat.Index})
	}
	s.takeStats(stats)
	s.readOneFirst()
	return nil
}

// readOneFirst makes the first sweep read one ready partition, even one
// at its tail. Any user may read the stats, but a replay read needs
// consume on the topic: a peek of an idle topic read nothing, so one by a
// user without the grant waited in silence (and ended 0 when interrupted)
// until a record arrived. The read's 403 (or 401) now ends it at once.
func (s *peekSession) readOneFirst() {
	for i := range s.cursors {
		if s.cursors[i].ready {
			s.cursors[i].endKnown = false
			return
		}
	}
}

func (s *peekSession) partitionStats(ctx context.Context) ([]client.PartitionStats, error) {
	var only *int
	if s.options.partition >= 0 {
		only = client.Ptr(s.options.partition)
	}
	topic, err := s.broker.GetTopic(ctx, s.topic, only)
	return topic.PartitionStats, err
}

// takeStats applies a read of the partitions' stats: each partition's end
// (unknown for one whose owner did not answer), the cursor of a partition
// that had no stats before (at its high watermark, or --from), and a
// cursor for each partition the peek does not follow yet: added to the
// topic since it started, all its records are new, so it is read from its
// oldest retained offset.
func (s *peekSession) takeStats(stats []client.PartitionStats) {
	following := make(map[int]*peekCursor, len(s.cursors))
	for i := range s.cursors {
		s.cursors[i].endKnown = false
		following[s.cursors[i].partition] = &s.cursors[i]
	}
	var added []peekCursor
	for _, stat := range stats {
		cursor, known := following[stat.Index]
		switch {
		case !stat.IsAvailable():
			continue
		case !known:
			added = append(added, peekCursor{partition: stat.Index, next: stat.OldestOffset, ready: true, end: stat.HighWatermark, endKnown: true})
			continue
		case !cursor.ready:
			cursor.next, cursor.ready = stat.HighWatermark, true
			if s.options.fromGiven {
				cursor.next = s.options.from
			}
		}
		cursor.end, cursor.endKnown = stat.HighWatermark, true
	}
	s.cursors = append(s.cursors, added...)
}

// behind reports whether a sweep should read the partition: ready, and
// with records past its cursor at the last read of the stats, or with no
// end known (the stats could not say; the read will).
func (c peekCursor) behind() bool {
	return c.ready && (!c.endKnown || c.next < c.end)
}

// loop sweeps the partitions until --max, Ctrl-C or a lasting error.
func (s *peekSession) loop(ctx context.Context) error {
	for ctx.Err() == nil {
		progressed, err := s.sweep(ctx)
		if err != nil || s.options.limitReached(s.received) {
			return err
		}
		if progressed {
			continue
		}
		if err := proc.SleepContext(ctx, peekIdleDelay); err != nil {
			return nil
		}
		s.refresh(ctx)
	}
	return nil
}

// sweep reads up to peekReadsPerSweepMax records from each ready partition
// and reports whether it read any.
func (s *peekSession) sweep(ctx context.Context) (bool, error) {
	progressed := false
	for i := range s.cursors {
		if !s.cursors[i].behind() {
			continue
		}
		read, err := s.readPartition(ctx, &s.cursors[i])
		progressed = progressed || read > 0
		if err != nil || s.options.limitReached(s.received) {
			return progressed, err
		}
	}
	return progressed, nil
}

// readPartition reads forward from the cursor until the tail (204), the
// per-sweep bound of reads or --max, and returns how many reads moved the
// cursor: a record printed, or offsets skipped on a 410 (a skip is
// progress: a sweep that only skipped paused before the next, each record
// of a corrupt stretch costing a pause).
func (s *peekSession) readPartition(ctx context.Context, cursor *peekCursor) (int, error) {
	moved := 0
	for reads := 0; reads < peekReadsPerSweepMax && !s.options.limitReached(s.received); reads++ {
		message, err := s.broker.Replay(ctx, s.topic, cursor.partition, cursor.next)
		if client.IsStatus(err, http.StatusGone) {
			s.skipGone(ctx, cursor, err)
			moved++
			continue
		}
		s.app.saySkipped(cursor.partition, cursor.skipped.end())
		if err != nil {
			return moved, s.replayFailed(ctx, cursor, err)
		}
		s.failing = nil
		if message == nil {
			return moved, nil
		}
		if err := s.printer.print(*message); err != nil {
			return moved, err
		}
		moved++
		s.received++
		cursor.next = max(message.Offset, cursor.next) + 1
	}
	return moved, nil
}

// skipGone jumps the cursor past a 410 (to the oldest retained offset,
// or past an unreadable record) and adds the offsets it skipped to the
// cursor's run, saying the run this ends.
func (s *peekSession) skipGone(ctx context.Context, cursor *peekCursor, err error) {
	s.failing = nil
	next := oldestAfter(ctx, s.broker, s.topic, cursor.partition, cursor.next)
	s.app.saySkipped(cursor.partition, cursor.skipped.add(cursor.next, next, goneReason(err)))
	cursor.next = next
}

// replayFailed handles a failed replay read other than a 410: retryable
// errors are reported and retried on a later sweep.
func (s *peekSession) replayFailed(ctx context.Context, cursor *peekCursor, err error) error {
	switch {
	case ctx.Err() != nil:
		return nil
	case retryable(err):
		s.failing = err
		s.reportFailure(cursor, err)
		return nil
	default:
		return err
	}
}

// reportFailure prints a retryable replay failure, at most one line per
// consumeRetryDelay (a peek of many partitions failed once per partition
// and sweep), saying how many it left out since the last.
func (s *peekSession) reportFailure(cursor *peekCursor, err error) {
	if time.Since(s.reportedAt) < consumeRetryDelay {
		s.suppressed++
		return
	}
	more := ""
	if s.suppressed > 0 {
		more = fmt.Sprintf("; %d more failed reads since the last report", s.suppressed)
	}
	fmt.Fprintf(s.app.stderr, "replay p%d @%d failed: %v (will retry%s)\n", cursor.partition, cursor.next, err, more)
	s.reportedAt, s.suppressed = time.Now(), 0
}

// refresh re-reads the stats after an idle sweep: the partitions' ends
// say which to read next, a partition that had no stats yet gets its
// cursor, and partitions added to the topic while the peek runs are
// followed too. Stats that cannot be read leave every end unknown: the
// next sweep reads each partition (and reports why it cannot).
func (s *peekSession) refresh(ctx context.Context) {
	stats, err := s.partitionStats(ctx)
	if err != nil {
		stats = nil // every end unknown
	}
	s.takeStats(stats)
}
