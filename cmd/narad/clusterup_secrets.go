package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

const (
	// clusterSecretsFile holds a development cluster's secrets inside its
	// data directory, so that a rerun finds the same admin password.
	clusterSecretsFile = "secrets.json"
	// clusterSecretsMode keeps the secrets file private.
	clusterSecretsMode os.FileMode = 0o600
	// clusterSecretBytes is the entropy of each generated secret (192 bits).
	clusterSecretBytes = 24
)

// clusterSecrets are the admin password and the cluster secret of a
// development cluster; both non-empty once loaded.
type clusterSecrets struct {
	AdminPassword string `json:"admin_password"`
	ClusterSecret string `json:"cluster_secret"`
}

// loadClusterSecrets reads the secrets of the cluster in dir, making and
// saving them on its first run.
func loadClusterSecrets(dir string) (clusterSecrets, error) {
	path := filepath.Join(dir, clusterSecretsFile)
	var secrets clusterSecrets
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &secrets); err != nil || secrets.AdminPassword == "" || secrets.ClusterSecret == "" {
			return secrets, fmt.Errorf("%s is damaged (remove it only together with the cluster's data): %v", path, err)
		}
		return secrets, nil
	case !errors.Is(err, os.ErrNotExist):
		return secrets, fmt.Errorf("read %s: %w", path, err)
	}
	if secrets.AdminPassword, err = randomSecret(); err != nil {
		return secrets, err
	}
	if secrets.ClusterSecret, err = randomSecret(); err != nil {
		return secrets, err
	}
	data, _ = json.Marshal(secrets)
	if err := os.WriteFile(path, data, clusterSecretsMode); err != nil {
		return secrets, fmt.Errorf("save %s: %w", path, err)
	}
	return secrets, nil
}

func randomSecret() (string, error) {
	secret := make([]byte, clusterSecretBytes)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(secret), nil
}
