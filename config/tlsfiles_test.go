package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tlsFilesOf is every TLS file cfg names, in one list.
func tlsFilesOf(cfg Config) []TLSFile {
	httpCert, httpKey := HTTPTLSFiles(cfg.HTTP.TLSCertFile, cfg.HTTP.TLSKeyFile)
	clusterCert, clusterKey, clusterCA := cfg.Cluster.TLSFiles()
	return []TLSFile{httpCert, httpKey, clusterCert, clusterKey, clusterCA}
}

// Property: the names of each TLS setting, kept once here (they were
// spelled in config/validate.go, config/peers.go and host/tlsfiles.go),
// are the setting's: its variable sets that file's path and no other, and
// so does its key in a configuration file.
func TestTLSFilesNameTheirSettings(t *testing.T) {
	for index, file := range tlsFilesOf(Default()) {
		require.Empty(t, file.Path, "%s is unset by default", file.Key)
		require.Equal(t, file.Key+" ("+file.Variable+")", file.Named())

		fromEnv := Default()
		require.NoError(t, ApplyEnv(&fromEnv, func(name string) string {
			if name == file.Variable {
				return "/from/env.pem"
			}
			return ""
		}))
		section, name, _ := strings.Cut(file.Key, ".")
		fromFile, err := Parse([]byte(`{"` + section + `": {"` + name + `": "/from/file.pem"}}`))
		require.NoError(t, err, "%s is a key of the file", file.Key)
		for other, set := range tlsFilesOf(fromEnv) {
			want := map[bool]string{true: "/from/env.pem", false: ""}[other == index]
			require.Equal(t, want, set.Path, "%s sets %s", file.Variable, set.Key)
		}
		for other, set := range tlsFilesOf(fromFile) {
			want := map[bool]string{true: "/from/file.pem", false: ""}[other == index]
			require.Equal(t, want, set.Path, "%s in the file sets %s", file.Key, set.Key)
		}
	}
}
