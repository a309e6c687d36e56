package host

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"narad/config"
)

// The TLS files a configuration names are read and checked with the rest
// of the configuration (OptionsFrom), before anything touches the data
// directory: a missing file, one that holds no PEM certificate or key, or
// a key that is not the certificate's, is a configuration error (exit 2)
// naming its setting and its variable. It was found only when the node
// bound its listener, after it had written its data directory's identity,
// incarnation and metastore, and ended the process with exit 1, which a
// supervisor restarts (outside audit).

// tlsFile is a PEM file a setting names (its names are config's).
type tlsFile struct{ config.TLSFile }

func httpTLSFiles(certFile, keyFile string) (cert, key tlsFile) {
	httpCert, httpKey := config.HTTPTLSFiles(certFile, keyFile)
	return tlsFile{httpCert}, tlsFile{httpKey}
}

func clusterTLSFiles(c config.Cluster) (cert, key, ca tlsFile) {
	clusterCert, clusterKey, clusterCA := c.TLSFiles()
	return tlsFile{clusterCert}, tlsFile{clusterKey}, tlsFile{clusterCA}
}

// problem names the file's setting in front of err.
func (f tlsFile) problem(err error) error {
	return fmt.Errorf("%s: %w", f.Named(), err)
}

func (f tlsFile) read() ([]byte, error) {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, f.problem(err)
	}
	return data, nil
}

// loadKeyPair reads a certificate and its private key. A problem of one
// file names that file's setting; a key that is not the certificate's
// names both.
func loadKeyPair(cert, key tlsFile) (tls.Certificate, error) {
	certPEM, certErr := cert.read()
	keyPEM, keyErr := key.read()
	if err := errors.Join(certErr, keyErr); err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err == nil {
		return pair, nil
	}
	certErr, keyErr = checkCertificatePEM(cert.Path, certPEM), checkPrivateKeyPEM(key.Path, keyPEM)
	if certErr == nil && keyErr == nil { // each file is sound on its own: they are not a pair
		return tls.Certificate{}, fmt.Errorf("%s, %s (%s, %s): %w", cert.Key, key.Key, cert.Variable, key.Variable, err)
	}
	if certErr != nil {
		certErr = cert.problem(certErr)
	}
	if keyErr != nil {
		keyErr = key.problem(keyErr)
	}
	return tls.Certificate{}, errors.Join(certErr, keyErr)
}

// checkCertificatePEM reports why data, read from path, holds no
// certificate the TLS stack can use first (its leaf), or nil.
func checkCertificatePEM(path string, data []byte) error {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return fmt.Errorf("%s holds no PEM certificate", path)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
}

// checkPrivateKeyPEM reports why data, read from path, holds no private
// key the TLS stack can parse (PKCS #1, PKCS #8 or SEC 1, as
// tls.X509KeyPair reads them), or nil.
func checkPrivateKeyPEM(path string, data []byte) error {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return fmt.Errorf("%s holds no PEM private key", path)
		}
		if block.Type != "PRIVATE KEY" && !strings.HasSuffix(block.Type, " PRIVATE KEY") {
			continue
		}
		if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
			return nil
		}
		if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			return nil
		}
		if _, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
			return nil
		}
		return fmt.Errorf("%s holds a %s block that is no private key the TLS stack can parse", path, block.Type)
	}
}

// loadClusterTLS builds the mutual TLS configuration of the node-to-node
// transport from the three files (all or none: config validation checks
// it), or returns nil when none is named. It reads them whether or not
// the node has peers: a file named is checked.
func loadClusterTLS(c config.Cluster) (*tls.Config, error) {
	if c.TLSCertFile == "" && c.TLSKeyFile == "" && c.TLSCAFile == "" {
		return nil, nil
	}
	certFile, keyFile, caFile := clusterTLSFiles(c)
	certificate, pairErr := loadKeyPair(certFile, keyFile)
	authorities, caErr := loadAuthorities(caFile)
	if err := errors.Join(pairErr, caErr); err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{certificate},
		RootCAs:      authorities, ClientCAs: authorities,
		ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS13,
	}, nil
}

// loadAuthorities reads a PEM bundle of CA certificates.
func loadAuthorities(file tlsFile) (*x509.CertPool, error) {
	data, err := file.read()
	if err != nil {
		return nil, err
	}
	authorities := x509.NewCertPool()
	if !authorities.AppendCertsFromPEM(data) {
		return nil, file.problem(fmt.Errorf("%s holds no PEM certificate", file.Path))
	}
	return authorities, nil
}

// CheckTLSFiles reads and checks every TLS file cfg names, as OptionsFrom
// does, so that a command can report their problems beside the other
// settings' (cfg.Validate) in one go: a wrong certificate path was
// reported only on the next start, once the other problems were mended
// (whole-change review). A pair or trio set only in part is left to
// Validate, which names what is missing.
func CheckTLSFiles(cfg config.Config) error {
	var problems []error
	if cfg.HTTP.TLSCertFile != "" && cfg.HTTP.TLSKeyFile != "" {
		_, err := loadKeyPair(httpTLSFiles(cfg.HTTP.TLSCertFile, cfg.HTTP.TLSKeyFile))
		problems = append(problems, err)
	}
	if c := cfg.Cluster; c.TLSCertFile != "" && c.TLSKeyFile != "" && c.TLSCAFile != "" {
		_, err := loadClusterTLS(c)
		problems = append(problems, err)
	}
	return errors.Join(problems...)
}
