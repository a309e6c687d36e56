package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A NARAD_* variable no setting reads was ignored without a word: an
// operator who wrote NARAD_STORAGE_DATA_DIR (after the key
// storage.data_dir) had the data in ./data. UnknownEnvNames names it,
// with the variable it most likely meant; the settings' own variables,
// the CLI's, and variables of other programs are not named.
func TestUnknownEnvNamesNamesTyposWithTheirLikelyVariable(t *testing.T) {
	environ := []string{
		"NARAD_STORAGE_DATA_DIR=/srv/narad", "NARAD_DATA_DIR=/x", "NARAD_ADDR=http://h:7942", "HOME=/root",
		"NARAD_HTTP_MAX_CONECTIONS=10", "NARAD_SOMETHING_ELSE=1", "NARAD_STORAGE_DATA_DIR=again", "NARAD_PASS=",
	}
	require.Equal(t, []UnknownEnv{
		{Name: "NARAD_HTTP_MAX_CONECTIONS", Suggestion: "NARAD_HTTP_MAX_CONNECTIONS"},
		{Name: "NARAD_SOMETHING_ELSE", Suggestion: ""},
		{Name: "NARAD_STORAGE_DATA_DIR", Suggestion: "NARAD_DATA_DIR"},
	}, UnknownEnvNames(environ))
	require.Empty(t, UnknownEnvNames([]string{"PATH=/bin", "NARAD_NODE_ID=n1"}))
}
