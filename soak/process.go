package soak

import (
	"net/http"
	"path/filepath"

	"narad/client"
	"narad/proc"
)

// nodeProcess is one `narad serve` node of the soak: its identity, ports
// and data directory stay the same across restarts; its process (the
// embedded proc.Process, set by cluster.setEnv before the first start)
// changes.
type nodeProcess struct {
	*proc.Process
	// id, httpAddr, clusterAddr, dataDir and logPath are set when the node
	// is planned and never change.
	id          string
	httpAddr    string
	clusterAddr string
	dataDir     string
	logPath     string
	// client sends the load and the control requests.
	client *client.Client
	// httpClient scrapes /metrics and probes /readyz.
	httpClient *http.Client
}

// nodeLogPath is where a node's log lives in the run directory.
func nodeLogPath(dir, id string) string { return filepath.Join(dir, id+".log") }
