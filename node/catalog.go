package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"narad/storage"
)

// catalogFile holds the topic definitions of a single node. (In a cluster
// the Raft metastore holds them instead.)
const (
	catalogFile    = "topics.json"
	catalogVersion = 1
	topicsDir      = "topics"
)

// topic is a topic's definition plus the node's in-memory cursors.
type topic struct {
	info TopicInfo
	// produceCursor picks the partition of the next keyless record.
	produceCursor int
	// consumeCursor is where the next consume starts looking.
	consumeCursor int
}

// catalog is the set of topics. Invariant: names is the sorted list of
// the keys of topics.
type catalog struct {
	topics map[string]*topic
	names  []string
}

type catalogDisk struct {
	Version int         `json:"version"`
	Topics  []TopicInfo `json:"topics"`
}

func loadCatalog(fs storage.FS) (*catalog, error) {
	cat := &catalog{topics: map[string]*topic{}}
	data, err := storage.ReadFile(fs, catalogFile)
	if errors.Is(err, storage.ErrNotExist) {
		return cat, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read topic catalog: %w", err)
	}
	var disk catalogDisk
	if err := json.Unmarshal(data, &disk); err != nil {
		return nil, fmt.Errorf("decode topic catalog: %w", err)
	}
	if disk.Version != catalogVersion {
		return nil, fmt.Errorf("topic catalog version %d, want %d", disk.Version, catalogVersion)
	}
	for _, info := range disk.Topics {
		cat.put(info)
	}
	return cat, nil
}

func (c *catalog) get(name string) (*topic, bool) {
	t, ok := c.topics[name]
	return t, ok
}

// put adds or replaces a topic definition, keeping cursors of a replaced
// topic.
func (c *catalog) put(info TopicInfo) {
	if t, ok := c.topics[info.Name]; ok {
		t.info = info
		return
	}
	c.topics[info.Name] = &topic{info: info}
	i := sort.SearchStrings(c.names, info.Name)
	c.names = append(c.names, "")
	copy(c.names[i+1:], c.names[i:])
	c.names[i] = info.Name
}

func (c *catalog) remove(name string) {
	delete(c.topics, name)
	i := sort.SearchStrings(c.names, name)
	if i < len(c.names) && c.names[i] == name {
		c.names = append(c.names[:i], c.names[i+1:]...)
	}
}

// save persists the catalog by atomic replace.
func (c *catalog) save(fs storage.FS) error {
	disk := catalogDisk{Version: catalogVersion, Topics: make([]TopicInfo, 0, len(c.names))}
	for _, name := range c.names {
		disk.Topics = append(disk.Topics, c.topics[name].info)
	}
	data, err := json.Marshal(disk)
	assert(err == nil, "node: encode catalog: %v", err)
	return storage.WriteFileAtomic(fs, catalogFile, data)
}

// pageAfter returns up to limit names greater than token.
func (c *catalog) pageAfter(token string, limit int) []string {
	i := sort.Search(len(c.names), func(i int) bool { return c.names[i] > token })
	end := min(i+limit, len(c.names))
	return c.names[i:end]
}
