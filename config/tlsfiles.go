package config

// TLSFile is a PEM file a TLS setting names: the setting's key (its JSON
// path) and its NARAD_* variable, which every message about the file
// names, and the path the setting holds. The names live here, once:
// Validate, the cluster's checks and the host's reading of the files all
// take them from HTTPTLSFiles and ClusterTLSFiles.
type TLSFile struct {
	Key, Variable string
	Path          string
}

// Named names the setting both ways, "key (VARIABLE)": the configuration
// does not record whether a value came from the file or the environment.
func (f TLSFile) Named() string { return f.Key + " (" + f.Variable + ")" }

// HTTPTLSFiles are the certificate and key files of the API's TLS
// (http.tls_cert_file, http.tls_key_file), holding certFile and keyFile.
func HTTPTLSFiles(certFile, keyFile string) (cert, key TLSFile) {
	return TLSFile{"http.tls_cert_file", "NARAD_HTTP_TLS_CERT_FILE", certFile},
		TLSFile{"http.tls_key_file", "NARAD_HTTP_TLS_KEY_FILE", keyFile}
}

// TLSFiles are the certificate, key and CA files of the node-to-node
// mutual TLS (cluster.tls_cert_file, cluster.tls_key_file,
// cluster.tls_ca_file).
func (c Cluster) TLSFiles() (cert, key, ca TLSFile) {
	return TLSFile{"cluster.tls_cert_file", "NARAD_CLUSTER_TLS_CERT_FILE", c.TLSCertFile},
		TLSFile{"cluster.tls_key_file", "NARAD_CLUSTER_TLS_KEY_FILE", c.TLSKeyFile},
		TLSFile{"cluster.tls_ca_file", "NARAD_CLUSTER_TLS_CA_FILE", c.TLSCAFile}
}
