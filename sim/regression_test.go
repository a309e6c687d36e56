package sim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRegressionSeeds runs every seed in testdata/seeds.txt: seeds that
// once failed (each line: seed, profile, optionally nodes=N, moves,
// users, deadletters, deadletters-aimed, fanout, sites=on (the core's fault
// sites on; off otherwise), media-clusters (Options.MediaInClusters),
// disk-pressure (Options.DiskPressure), late-syncs (Options.LateSyncs) and
// weather (a moves world's lulls, Options.Weather; off otherwise), then
// why it is kept).
func TestRegressionSeeds(t *testing.T) {
	file, err := os.Open("testdata/seeds.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	count := 0
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		seed, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			t.Fatalf("bad seed line %q: %v", scanner.Text(), err)
		}
		profile, err := ProfileByName(fields[1])
		if err != nil {
			t.Fatal(err)
		}
		opts := DefaultOptions(seed)
		opts.Faults = profile
		opts.Sites = SitesOff        // as the seed failed, unless its line says sites=on
		opts.MediaInClusters = false // likewise, unless it says media-clusters
		opts.DiskPressure = false    // likewise, unless it says disk-pressure
		opts.LateSyncs = false       // likewise, unless it says late-syncs
		if err := applySeedFlags(&opts, fields[2:]); err != nil {
			t.Fatalf("bad seed line %q: %v", scanner.Text(), err)
		}
		if report := Run(opts); report.Failure != nil {
			t.Error(report.FailureText())
		}
		count++
	}
	if count == 0 {
		t.Fatal("testdata/seeds.txt lists no seed")
	}
}

// applySeedFlags sets the options a seed line names after its profile:
// the flags lead, and the first field that is not one starts the reason,
// so a word of the reason ("moves", say) never changes the run.
func applySeedFlags(opts *Options, fields []string) error {
	for _, field := range fields {
		switch {
		case strings.HasPrefix(field, "nodes="):
			nodes, err := strconv.Atoi(strings.TrimPrefix(field, "nodes="))
			if err != nil {
				return fmt.Errorf("bad nodes: %w", err)
			}
			opts.Nodes = nodes
		case field == "moves":
			opts.Moves = true
		case field == "users":
			opts.Users = true
		case field == "deadletters":
			opts.DeadLetters = true
		case field == "deadletters-aimed":
			opts.DeadLettersAimed = true
		case field == "fanout":
			opts.Fanout = true
		case field == "fanout-aged-out":
			opts.FanoutAgedOut = true
			opts.SafetyMs = max(opts.SafetyMs, AgedOutSafetyMs)
		case field == "sites=on":
			opts.Sites = SitesOn
		case field == "media-clusters":
			opts.MediaInClusters = true
		case field == "disk-pressure":
			opts.DiskPressure = true
		case field == "late-syncs":
			opts.LateSyncs = true
		case field == "weather":
			opts.Weather = WeatherOn
		case strings.ContainsAny(field, "=") || strings.HasPrefix(field, "-"):
			// a flag word misspelled, or copied from a reproduce line
			// (-moves=true), would start the reason and change nothing
			return fmt.Errorf("%q is no flag word of a seed line (%s)", field, seedFlagWords)
		default:
			return checkSeedOptions(*opts)
		}
	}
	return checkSeedOptions(*opts)
}

// seedFlagWords are the words applySeedFlags reads.
const seedFlagWords = "nodes=N moves users deadletters deadletters-aimed fanout fanout-aged-out sites=on media-clusters disk-pressure late-syncs weather"

// checkSeedOptions refuses, as TestSim refuses its flags (ignoredFlags),
// a seed line whose words make a world the simulator has not, or name a
// setting that changes nothing in its world.
func checkSeedOptions(opts Options) error {
	if err := worldError(opts, ""); err != nil {
		return err
	}
	if opts.MediaInClusters && !(opts.Nodes == 3 && opts.Moves) {
		return fmt.Errorf("media-clusters changes only three-node moves worlds")
	}
	return nil
}

// TestSeedFlagsStopAtTheReason: the words of a reason are not flags.
func TestSeedFlagsStopAtTheReason(t *testing.T) {
	opts := DefaultOptions(1)
	opts.MediaInClusters = false // as TestRegressionSeeds starts a line
	if err := applySeedFlags(&opts, strings.Fields("nodes=3 sites=on a move's flip raced moves fanout deadletters media-clusters nodes=5")); err != nil {
		t.Fatal(err)
	}
	if opts.Nodes != 3 || opts.Sites != SitesOn || opts.Moves || opts.Fanout || opts.DeadLetters || opts.MediaInClusters {
		t.Fatalf("flags read from the reason: %+v", opts)
	}
	flagged := DefaultOptions(1)
	flagged.MediaInClusters, flagged.DiskPressure, flagged.LateSyncs = false, false, false
	if err := applySeedFlags(&flagged, strings.Fields("nodes=3 moves media-clusters disk-pressure late-syncs weather a reason weather")); err != nil {
		t.Fatal(err)
	}
	if !flagged.MediaInClusters || !flagged.DiskPressure || !flagged.LateSyncs || !flagged.Moves || flagged.Weather != WeatherOn {
		t.Fatalf("media-clusters or weather not read as a flag: %+v", flagged)
	}
	if DefaultOptions(1).Weather != WeatherOff {
		t.Fatal("a regression seed without the word weather would run with it")
	}
	if err := applySeedFlags(&opts, []string{"nodes=x"}); err == nil {
		t.Fatal("a bad node count was accepted")
	}
}

// A seed line's flag word misspelled, or copied from a reproduce line
// (moves=true, -moves), started the reason and changed nothing: the seed
// ran another world than the one that failed. Such a word, and a world
// TestSim would refuse, are errors.
func TestASeedLineWithAWrongFlagWordIsRefused(t *testing.T) {
	for _, line := range []string{"nodes=3 moves=true a reason", "nodes=3 -moves a reason", "nodes=4 moves a reason",
		"nodes=1 moves a reason", "nodes=5 moves media-clusters a reason", "weather a reason"} {
		opts := DefaultOptions(1)
		opts.MediaInClusters, opts.DiskPressure = false, false
		if err := applySeedFlags(&opts, strings.Fields(line)); err == nil {
			t.Errorf("seed line %q accepted", line)
		}
	}
}

// A reproduce line runs the world that failed: a regression seed or a
// planted-bug sweep runs with disk pressure and the media fault off, and
// the line left both out, so run as printed it took TestSim's defaults
// (both on) and another trace. It names -disk-pressure and -late-syncs
// always and -media-clusters where it changes something (three-node
// moves worlds; TestSim refuses it elsewhere).
func TestAReproduceLineNamesDiskPressureAndTheMediaFault(t *testing.T) {
	failed := func(nodes int, moves, media, pressure bool) string {
		return Report{Seed: 24, Nodes: nodes, Moves: moves, MediaInClusters: media, DiskPressure: pressure, LateSyncs: pressure,
			Profile: "all", SafetyMs: 30_000, Failure: &Failure{Checker: "x", Detail: "y"}}.FailureText()
	}
	line := failed(3, true, false, false)
	if !strings.Contains(line, " -disk-pressure=false") || !strings.Contains(line, " -late-syncs=false") ||
		!strings.Contains(line, " -media-clusters=false") {
		t.Fatalf("three-node moves world: %s", line)
	}
	line = failed(1, false, true, true)
	if !strings.Contains(line, " -disk-pressure=true") || !strings.Contains(line, " -late-syncs=true") || strings.Contains(line, "-media-clusters") {
		t.Fatalf("one-node world: %s", line)
	}
}
