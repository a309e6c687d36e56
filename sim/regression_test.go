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
// disk-pressure (Options.DiskPressure) and
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
		case field == "weather":
			opts.Weather = WeatherOn
		default:
			return nil
		}
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
	flagged.MediaInClusters, flagged.DiskPressure = false, false
	if err := applySeedFlags(&flagged, strings.Fields("nodes=3 moves media-clusters disk-pressure weather a reason weather")); err != nil {
		t.Fatal(err)
	}
	if !flagged.MediaInClusters || !flagged.DiskPressure || !flagged.Moves || flagged.Weather != WeatherOn {
		t.Fatalf("media-clusters or weather not read as a flag: %+v", flagged)
	}
	if DefaultOptions(1).Weather != WeatherOff {
		t.Fatal("a regression seed without the word weather would run with it")
	}
	if err := applySeedFlags(&opts, []string{"nodes=x"}); err == nil {
		t.Fatal("a bad node count was accepted")
	}
}
