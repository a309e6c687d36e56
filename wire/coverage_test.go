package wire_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/wire/wiretest"
)

// vocabularySourceDir is package msg, read to find the types the codec
// must cover.
const vocabularySourceDir = "../msg"

// The types the codec encodes, enumerated by hand. When msg adds a type,
// TestCodecCoversTheVocabulary fails until the codec, its type table and
// these lists cover it.
var (
	coveredMessages = []string{"RaftMessage", "ForwardRequest", "ForwardReply", "Subscribe", "Notify", "Join", "JoinRelay", "JoinAccepted", "Heartbeat", "ForwardCancel", "Retired"}
	coveredRequests = []string{"CreateTopic", "ListTopics", "GetTopic", "AlterTopic", "DeleteTopic",
		"Produce", "Consume", "Replay", "Ack", "ListMembers", "ListMoves",
		"MoveStatus", "MoveRead", "MoveFreeze", "MoveSweepCheck", "Decommission",
		"AttachChild", "DetachChild", "ListChildren"}
	coveredResults = []string{"TopicInfo", "TopicPage", "TopicDetail", "ProduceResult", "ConsumeResult",
		"ReplayResult", "AckResult", "MembersResult", "MovesResult",
		"MoveSourceState", "MoveChunk", "MoveVerdict", "ChildrenResult"}
)

// TestCodecCoversTheVocabulary reads package msg's source and checks that
// the hand lists above name exactly the types of its three sealed
// interfaces: every type with an isPeerMessage, isRequest or isResult
// method. The result types must also be exactly those named in the doc
// comment of msg.Reply or in a "Result: T" line of a request type's doc
// comment. It then checks that the samples exercise every listed type.
func TestCodecCoversTheVocabulary(t *testing.T) {
	files := parseVocabulary(t)
	requestTypes := typesWithMethod(files, "isRequest")
	require.ElementsMatch(t, coveredMessages, typesWithMethod(files, "isPeerMessage"), "peer message types of msg")
	require.ElementsMatch(t, coveredRequests, requestTypes, "request types of msg")
	require.ElementsMatch(t, coveredResults, typesWithMethod(files, "isResult"), "result types of msg")
	resultTypes := union(resultTypesOfReply(t, files["reply.go"]), resultTypesOfRequests(files, requestTypes))
	require.ElementsMatch(t, coveredResults, resultTypes, "result types named in msg.Reply's comment and in the requests' comments")

	var messages, requests, results []string
	for _, sample := range wiretest.Samples() {
		messages = append(messages, typeName(sample.Envelope.Message))
		switch m := sample.Envelope.Message.(type) {
		case msg.ForwardRequest:
			requests = append(requests, typeName(m.Request))
		case msg.ForwardReply:
			results = append(results, typeName(m.Reply.Result))
		}
	}
	require.Subset(t, messages, coveredMessages, "samples of every peer message")
	require.Subset(t, requests, coveredRequests, "samples of every request")
	require.Subset(t, results, append(coveredResults, "<nil>"), "samples of every result, and of none")
}

// TestCodecCoversEveryCodeAndAction: the codec accepts codes
// CodeInvalid..CodeForbidden and actions AckCommit..AckReturn; the const
// blocks of msg must declare exactly those.
func TestCodecCoversEveryCodeAndAction(t *testing.T) {
	files := parseVocabulary(t)
	require.Len(t, constsOfType(files, "Code"), int(msg.CodeForbidden-msg.CodeInvalid)+1, "msg.Code constants; wire.validCode covers CodeInvalid..CodeForbidden")
	require.Len(t, constsOfType(files, "AckAction"), int(msg.AckReturn-msg.AckCommit)+1, "msg.AckAction constants; wire covers AckCommit..AckReturn")
}

func typeName(v any) string {
	if v == nil {
		return "<nil>"
	}
	return reflect.TypeOf(v).Name()
}

// parseVocabulary parses the non-test files of package msg, by base name.
func parseVocabulary(t *testing.T) map[string]*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(vocabularySourceDir, "*.go"))
	require.NoError(t, err)
	files := map[string]*ast.File{}
	fileSet := token.NewFileSet()
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fileSet, path, nil, parser.ParseComments)
		require.NoError(t, err)
		files[filepath.Base(path)] = file
	}
	require.Contains(t, files, "peer.go")
	require.Contains(t, files, "reply.go")
	return files
}

// typesWithMethod returns the receiver types of every method named name.
func typesWithMethod(files map[string]*ast.File, name string) []string {
	var names []string
	for _, file := range files {
		for _, decl := range file.Decls {
			function, ok := decl.(*ast.FuncDecl)
			if !ok || function.Recv == nil || function.Name.Name != name {
				continue
			}
			receiver := function.Recv.List[0].Type
			if star, ok := receiver.(*ast.StarExpr); ok {
				receiver = star.X
			}
			names = append(names, receiver.(*ast.Ident).Name)
		}
	}
	slices.Sort(names)
	return names
}

// resultTypesOfReply returns the type names after "->" in the doc comment
// of type Reply, without "nil".
func resultTypesOfReply(t *testing.T, file *ast.File) []string {
	arrow := regexp.MustCompile(`->\s*(\w+)`)
	for _, decl := range file.Decls {
		general, ok := decl.(*ast.GenDecl)
		if !ok || general.Tok != token.TYPE || general.Specs[0].(*ast.TypeSpec).Name.Name != "Reply" {
			continue
		}
		var names []string
		for _, match := range arrow.FindAllStringSubmatch(general.Doc.Text(), -1) {
			if match[1] != "nil" && !slices.Contains(names, match[1]) {
				names = append(names, match[1])
			}
		}
		return names
	}
	t.Fatal("type Reply not found in msg/reply.go")
	return nil
}

// resultTypesOfRequests returns the type names after "Result:" in the doc
// comments of the named request types, without "nil".
func resultTypesOfRequests(files map[string]*ast.File, requests []string) []string {
	resultLine := regexp.MustCompile(`Result:\s*(\w+)`)
	var names []string
	for _, file := range files {
		for _, decl := range file.Decls {
			general, ok := decl.(*ast.GenDecl)
			if !ok || general.Tok != token.TYPE || !slices.Contains(requests, general.Specs[0].(*ast.TypeSpec).Name.Name) {
				continue
			}
			for _, match := range resultLine.FindAllStringSubmatch(general.Doc.Text(), -1) {
				if match[1] != "nil" {
					names = append(names, match[1])
				}
			}
		}
	}
	return names
}

// union returns the distinct names of both lists, sorted.
func union(a, b []string) []string {
	names := slices.Concat(a, b)
	slices.Sort(names)
	return slices.Compact(names)
}

// constsOfType returns the constants of every const block whose first
// constant is declared with type typeName (iota blocks).
func constsOfType(files map[string]*ast.File, typeName string) []string {
	var names []string
	for _, file := range files {
		for _, decl := range file.Decls {
			general, ok := decl.(*ast.GenDecl)
			if !ok || general.Tok != token.CONST {
				continue
			}
			first := general.Specs[0].(*ast.ValueSpec)
			if ident, ok := first.Type.(*ast.Ident); !ok || ident.Name != typeName {
				continue
			}
			for _, spec := range general.Specs {
				for _, name := range spec.(*ast.ValueSpec).Names {
					names = append(names, name.Name)
				}
			}
		}
	}
	return names
}
