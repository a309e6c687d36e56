package msg

// Fixed bounds of the request surface. They are part of the contract with
// clients, so they are constants, not configuration; the peer decoder
// checks the same bounds on what it decodes.
const (
	TopicNameBytesMax      = 255
	TopicsPageDefault      = 100
	TopicsPageMax          = 1000
	ConsumeBatchMax        = 100                        // max of a batch consume
	ProduceBatchRecordsMax = 1000                       // records of one batch produce
	ProduceBatchBytesMax   = 8 << 20                    // payload bytes of one batch produce
	MessageBytesMax        = 1 << 20                    // payload bytes of one record
	KeyBytesMax            = 4 << 10                    // key bytes of one record
	SchemaBytesMax         = 256 << 10                  // bytes of one JSON Schema document
	AckBatchHandlesMax     = 1000                       // handles of one batch ack
	PartitionsMin          = 3                          // a topic has at least this many partitions
	PartitionsMaxDefault   = 108                        // topic.max_partitions unless configured
	RetentionMsMin         = 3_600_000                  // a topic's retention, unless it keeps forever
	RetentionMsMax         = 100 * 365 * 24 * 3_600_000 // a topic's retention: 100 years
	VisibilityTimeoutMsMax = 12 * 3_600_000             // a topic's lease of a consumed record: 12 hours
	MaxDeliveriesMax       = 1000                       // a topic's max_deliveries (0: no dead letters)
	FanoutChildrenMax      = 108                        // fan-out children of one parent
	FanoutDelayMsMax       = 365 * 24 * 3_600_000       // a delay child's delay: one year
)
