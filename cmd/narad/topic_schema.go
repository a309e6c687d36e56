package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// schemaBytesMax is the server's bound on one JSON Schema (256 KiB); a
// larger file is refused before anything is sent.
const schemaBytesMax = 256 << 10

// readSchemaFile reads a JSON Schema from path ("-" for stdin) and checks
// that it is one JSON value within the server's size bound. The server
// compiles it and checks the rest.
func (a *app) readSchemaFile(path string) (json.RawMessage, error) {
	var reader io.Reader = a.stdin
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return nil, usagef("--schema: %v", err)
		}
		defer file.Close()
		reader = file
	}
	document, err := readBounded(reader, schemaBytesMax)
	if err != nil {
		return nil, fmt.Errorf("--schema: %w", err)
	}
	if len(document) > schemaBytesMax {
		return nil, usagef("--schema: %s is larger than the server's limit of %d bytes (256 KiB)", path, schemaBytesMax)
	}
	if !utf8.Valid(document) {
		// json.Valid takes bad bytes in a string; the server refuses them
		return nil, usagef("--schema: %s is not valid UTF-8 (JSON text is)", path)
	}
	if !json.Valid(document) {
		return nil, usagef("--schema: %s is not valid JSON", path)
	}
	if string(bytes.TrimSpace(document)) == "null" {
		// The API reads a null schema as none: the topic would be created
		// without one (or the edit change nothing), and the command succeed.
		return nil, usagef("--schema: %s holds null, not a JSON Schema (an object or a boolean)", path)
	}
	return document, nil
}

func newTopicSchemaCommand(a *app) *cobra.Command {
	var version int
	cmd := &cobra.Command{
		Use:   "schema <name>",
		Short: "Print a topic's JSON Schema (the latest version, or --version N)",
		Long: `Print a topic's JSON Schema with its version, as JSON: {"version": V, "schema": ...}.

A topic gets a schema with "narad topic add --schema FILE" and a new version
with "narad topic edit --schema FILE". A new version may only add to the
previous one: no property removed, no type changed, the same required
fields. The same schema as the latest (whitespace and key order aside)
makes no new version, so a retried edit is harmless.
The server keeps the last 8 versions of each topic; older ones answer 404.`,
		Example: `  narad topic schema orders
  narad topic schema orders --version 1
  narad topic schema orders | jq .schema > orders.schema.json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version < 0 || version == 0 && cmd.Flags().Changed("version") {
				return usagef("--version must be at least 1")
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			schema, err := broker.TopicSchema(cmd.Context(), args[0], version)
			if err != nil {
				return err
			}
			return printJSON(a.stdout, schema)
		},
	}
	cmd.Flags().IntVar(&version, "version", 0, "the schema version to print (default: the latest)")
	return cmd
}
