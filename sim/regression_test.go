package sim

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRegressionSeeds runs every seed in testdata/seeds.txt: seeds that
// once failed (each line: seed, profile, optionally nodes=N, moves,
// deadletters, fanout and sites=on (the core's fault sites on; off
// otherwise), then why it is kept).
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
		opts.Sites = SitesOff // as the seed failed, unless its line says sites=on
		for _, field := range fields[2:] {
			if nodes, ok := strings.CutPrefix(field, "nodes="); ok {
				if opts.Nodes, err = strconv.Atoi(nodes); err != nil {
					t.Fatalf("bad nodes in %q: %v", scanner.Text(), err)
				}
			}
			opts.Moves = opts.Moves || field == "moves"
			opts.DeadLetters = opts.DeadLetters || field == "deadletters"
			if field == "sites=on" {
				opts.Sites = SitesOn
			}
			opts.Fanout = opts.Fanout || field == "fanout"
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
