package host

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/config"
	"narad/node"
	"narad/proc"
)

// dirListing is every path under dir with its size (directories as -1),
// or nil when dir does not exist.
func dirListing(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	listing := map[string]int64{}
	require.NoError(t, filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		size := info.Size()
		if info.IsDir() {
			size = -1
		}
		listing[strings.TrimPrefix(path, dir)] = size
		return nil
	}))
	return listing
}

// busyAddr holds a loopback port for the test's length.
func busyAddr(t *testing.T) string {
	t.Helper()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })
	return busy.Addr().String()
}

// A start refused on a port in use (the API's, pprof's, the cluster
// transport's) leaves its data directory as it found it: absent, empty,
// or as it was. It wrote a new directory's identity under the id that
// start had, and the corrected start was refused as another node
// (outside audit).
func TestAStartRefusedOnAPortLeavesTheDataDirectoryAsItWas(t *testing.T) {
	single := func(dir string, edit func(*Options)) Options {
		opts := DefaultOptions(dir)
		opts.HTTPAddr, opts.Node.NodeID = "127.0.0.1:0", "vm"
		edit(&opts)
		return opts
	}
	cases := map[string]func(dir string) Options{
		"api": func(dir string) Options {
			return single(dir, func(o *Options) { o.HTTPAddr = busyAddr(t) })
		},
		"pprof": func(dir string) Options {
			return single(dir, func(o *Options) { o.PprofAddr = busyAddr(t) })
		},
		"cluster": func(dir string) Options {
			clusterAddr := busyAddr(t)
			cfg := config.Default()
			cfg.Security.Enabled = false
			cfg.HTTP.Addr = "127.0.0.1:0"
			cfg.Storage.DataDir = dir
			cfg.Cluster.NodeID, cfg.Cluster.Addr = "n1", clusterAddr
			cfg.Cluster.Peers = []string{"n1@" + clusterAddr, "n2@127.0.0.1:1", "n3@127.0.0.1:2"}
			opts, err := OptionsFrom(cfg)
			require.NoError(t, err)
			return opts
		},
	}
	for name, options := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			absent, empty := filepath.Join(parent, "absent"), filepath.Join(parent, "empty")
			require.NoError(t, os.Mkdir(empty, 0o755))
			for _, dir := range []string{absent, empty} {
				before := dirListing(t, dir)
				_, err := Start(options(dir), slog.New(slog.DiscardHandler))
				require.ErrorContains(t, err, "address already in use")
				require.Equal(t, before, dirListing(t, dir), "the refused start changed %s", dir)
			}
			if name != "api" {
				return
			}
			// The audit's sequence: the corrected start takes the directory.
			opts := DefaultOptions(absent)
			opts.HTTPAddr, opts.Node.NodeID = "127.0.0.1:0", "n1"
			h, err := Start(opts, slog.New(slog.DiscardHandler))
			require.NoError(t, err, "the corrected start is refused")
			require.NoError(t, h.Shutdown())
		})
	}
}

// A directory whose topics/ holds partition data and that has no
// metastore is refused, as before, and left as it was, for the operator
// to restore the metastore into: the refused start wrote a new metastore
// and an identity there (outside audit). So is a directory that belongs
// to another node and has no metastore (it created metastore/).
func TestADataDirectoryRefusedAtStartIsLeftAsItWas(t *testing.T) {
	dir := t.TempDir()
	stoppedWithARecord(t, dir, "a")
	require.NoError(t, os.RemoveAll(filepath.Join(dir, metaStoreDir)))

	withIdentity := dirListing(t, dir)
	_, err := startNamed(t, dir, "a", false)
	require.ErrorIs(t, err, node.ErrDataWithoutMetastore)
	require.ErrorContains(t, err, "restore the metastore or move the data away")
	require.Equal(t, withIdentity, dirListing(t, dir))

	_, err = startNamed(t, dir, "b", false)
	require.ErrorContains(t, err, `belongs to the single node "a", and this process is configured as the single node "b"`)
	require.Equal(t, withIdentity, dirListing(t, dir))

	require.NoError(t, os.Remove(filepath.Join(dir, identityFile)))
	require.NoError(t, os.Remove(filepath.Join(dir, "incarnation")))
	bare := dirListing(t, dir)
	_, err = startNamed(t, dir, "a", false)
	require.ErrorIs(t, err, node.ErrDataWithoutMetastore)
	require.Equal(t, bare, dirListing(t, dir), "no identity, incarnation or metastore is written")
}

// Every TLS file the configuration names is read with the configuration,
// and a problem names its setting and its variable: a bad file was found
// only when the API's listener was bound, after the data directory was
// written, and exited 1, naming no setting (outside audit).
func TestOptionsFromChecksTheTLSFilesItNames(t *testing.T) {
	certFile, keyFile, _ := writeCertificate(t)
	otherCert, otherKey, _ := writeCertificate(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not pem"), 0o600))
	missing := filepath.Join(t.TempDir(), "nope.pem")

	httpConfig := func(cert, key string) config.Config {
		cfg := config.Default()
		cfg.HTTP.TLSCertFile, cfg.HTTP.TLSKeyFile = cert, key
		return cfg
	}
	for _, c := range []struct {
		name string
		cfg  config.Config
		want []string
	}{
		{"a missing certificate", httpConfig(missing, keyFile),
			[]string{"http.tls_cert_file (NARAD_HTTP_TLS_CERT_FILE): open " + missing + ": no such file or directory"}},
		{"a missing key", httpConfig(certFile, missing),
			[]string{"http.tls_key_file (NARAD_HTTP_TLS_KEY_FILE): open " + missing}},
		{"a certificate that is not PEM", httpConfig(notPEM, keyFile),
			[]string{"http.tls_cert_file (NARAD_HTTP_TLS_CERT_FILE): " + notPEM + " holds no PEM certificate"}},
		{"a key that is not PEM", httpConfig(certFile, notPEM),
			[]string{"http.tls_key_file (NARAD_HTTP_TLS_KEY_FILE): " + notPEM + " holds no PEM private key"}},
		{"a key that is not the certificate's", httpConfig(certFile, otherKey),
			[]string{"http.tls_cert_file, http.tls_key_file (NARAD_HTTP_TLS_CERT_FILE, NARAD_HTTP_TLS_KEY_FILE): tls: private key does not match public key"}},
		{"cluster files named on a single node", func() config.Config {
			cfg := config.Default()
			cfg.Cluster.TLSCertFile, cfg.Cluster.TLSKeyFile, cfg.Cluster.TLSCAFile = otherCert, missing, notPEM
			return cfg
		}(), []string{"cluster.tls_key_file (NARAD_CLUSTER_TLS_KEY_FILE): open " + missing,
			"cluster.tls_ca_file (NARAD_CLUSTER_TLS_CA_FILE): " + notPEM + " holds no PEM certificate"}},
	} {
		_, err := OptionsFrom(c.cfg)
		require.Error(t, err, c.name)
		for _, want := range c.want {
			assert.Contains(t, err.Error(), want, c.name)
		}
	}
	_, err := OptionsFrom(httpConfig(certFile, keyFile))
	require.NoError(t, err, "a sound pair")
}

// The start line says what the node exposes: TLS on or off,
// authentication on or off, and pprof's address or off.
func TestTheStartLineSaysWhatIsExposed(t *testing.T) {
	certFile, keyFile, _ := writeCertificate(t)
	pprofAddr, err := proc.FreeAddr()
	require.NoError(t, err)
	var logs bytes.Buffer
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr, opts.PprofAddr = "127.0.0.1:0", pprofAddr
	opts.Security.TLSCertFile, opts.Security.TLSKeyFile = certFile, keyFile
	h, err := Start(opts, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	require.NoError(t, h.Shutdown())
	line := startLine(t, logs.String())
	assert.Contains(t, line, " tls=on auth=off pprof="+pprofAddr+" ")
	assert.NotContains(t, logs.String(), "beyond loopback", "loopback only: no exposure to warn of")

	logs.Reset()
	opts = DefaultOptions(t.TempDir())
	opts.HTTPAddr, opts.Security.Enabled = "127.0.0.1:0", true
	h, err = Start(opts, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	require.NoError(t, h.Shutdown())
	assert.Contains(t, startLine(t, logs.String()), " tls=off auth=on pprof=off ")
}

func startLine(t *testing.T, logs string) string {
	t.Helper()
	for line := range strings.Lines(logs) {
		if strings.Contains(line, `msg="narad node serving"`) {
			return line
		}
	}
	t.Fatalf("no start line in %s", logs)
	return ""
}

// With authentication off, an API beyond loopback is warned of, and so
// is pprof beyond loopback (it is never authenticated); loopback
// addresses are not.
func TestExposureBeyondLoopbackIsWarnedOf(t *testing.T) {
	warnings := func(securityOn bool, httpAddr, pprofAddr string) string {
		var logs bytes.Buffer
		warnExposure(slog.New(slog.NewTextHandler(&logs, nil)), securityOn, httpAddr, pprofAddr)
		return logs.String()
	}
	assert.Contains(t, warnings(false, "[::]:7942", ""), "authentication is off")
	assert.Contains(t, warnings(false, "10.0.0.1:7942", ""), "authentication is off")
	assert.Empty(t, warnings(false, "127.0.0.1:7942", ""))
	assert.Empty(t, warnings(false, "[::1]:7942", ""))
	assert.Empty(t, warnings(true, "[::]:7942", ""))
	got := warnings(true, "127.0.0.1:7942", "[::]:6060")
	assert.Contains(t, got, "pprof listens beyond loopback")
	assert.NotContains(t, got, "authentication is off")
	assert.Empty(t, warnings(true, "127.0.0.1:7942", "127.0.0.1:6060"))
}
