// Package lint holds the repository's lint rules, run as an ordinary test:
// `go test ./lint`. It is the mechanical half of docs/style.md#determinism and
// docs/architecture.md#dependency-direction; review does the rest.
//
// What it owns: the rules below, the grandfather map of the function-length
// ratchet (in lint_test.go), and the tests of the rules themselves.
//
// Inputs: the Go source of the module whose go.mod is found by walking up
// from the test's working directory, and for the map-range rule the export
// data the go command produces for the core's dependencies (`go list
// -export`), and for the documentation rule every text file. Directories
// named vendor or testdata (the documentation rule reads testdata too),
// directories whose name starts with "." or "_", and nested modules are not
// part of the repository for these rules, as for the go command.
//
// Outputs: violations, each naming file:line, the rule and what to do
// instead. The package has no production API; nothing imports it.
//
// The rules:
//
//  1. Determinism of the core and the simulator (rule names
//     "go-statement", "clock", "global-rand", "crypto-rand", "os-import",
//     "os-backdoor", "dot-import"): every non-test file under node/, meta/,
//     rebalance/, invariant/, storage/ and sim/ starts no goroutine, reads no wall clock,
//     draws no global randomness and does no I/O except through
//     storage.FS, whose os implementation in storage/osfs.go is the one
//     file allowed to import os, syscall and golang.org/x/sys/unix. The
//     simulator, a driver, may
//     mark a reviewed exception for its harness with
//     `//determinism:ok <reason>` on the line or the line above; the core
//     may not. Import names are resolved per file, so renamed and shadowed
//     imports are handled; comments and strings never match.
//  2. Map order ("map-range"): a range over a map, or over maps.Keys,
//     maps.Values or maps.All, in a core or simulator package must carry a
//     reviewed exemption, `//determinism:ok <reason>`, on its line or the
//     line above.
//     Map types are found with go/types, once per build configuration the
//     package has (default tags, and each custom build tag it mentions).
//  3. The import graph ("import-graph"): msg, the message vocabulary, and
//     invariant, the assertion helper, import no narad package; storage
//     imports no narad package but chaos and invariant; node, meta and
//     rebalance never import the drivers, harnesses, client or lint; meta
//     and rebalance never import node; no sub-package of node (node/lease,
//     node/movedest, node/movesource, node/route) imports node; nobody
//     imports cmd; only tests import sim and fuzz.
//  4. The function-length ratchet ("function-length"): no function body in
//     a non-test, non-generated file is longer than functionBodyLinesMax
//     unless grandfathered, and a grandfathered function may only shrink.
//  5. Coverage marks ("coverage-mark"): every call of chaos.Reached in the
//     core names a constant of the registry in chaos/marks.go
//     (chaos.Mark...), never a string, so that the registry lists every
//     mark the simulator's sweeps can require.
//  6. Documentation ("doc-reference", "doc-link", "outside-document"):
//     every docs/<file>.md#<anchor> written in any text file of the
//     repository (code, comments, Markdown, testdata) names an existing
//     file and a heading of it, every relative link of a Markdown file
//     resolves, and no file cites a document that lives outside the
//     repository, so that the documentation cannot rot silently.
//  7. Fault sites ("fault-site"): in the core, chaos.Buggify never takes
//     a string literal and no chaos.Site is made by conversion, so every
//     site is a constant of the registry in chaos/sites.go; and every
//     constant of that registry is named by some core code, so no site is
//     listed without a caller.
//  8. Events ("event-documented"): every node event kind that node or
//     host code raises with a literal kind (observer.Event("kind", ...))
//     is named in backquotes in docs/operations.md, so that an operator
//     who reads one in a log can look it up.
//
// Invariants: the rules read the repository and never change it; a file
// that does not parse, or a core package that does not type-check, is itself
// reported, because a rule cannot vouch for code it cannot read.
package lint
