package keyspace

import "context"

// The HTTP API between the layers, under [PathPrefix]. Query nodes serve
// the write side (batches, copies, drops) beside the find API; ingest
// nodes and front ends serve only the status. Every request but the
// status carries "Authorization: Bearer <token>" when the query node has
// a token.
const (
	// PathPrefix is where the API lives.
	PathPrefix = "/shard/v1/"
	// PathBatch: POST a [Batch] in its wire form
	// (application/octet-stream). 200 with a [BatchAnswer] when the
	// batch is applied and durable, or was already (a replay); 409 with a
	// BatchAnswer when Seq skips ahead of what the node applied, naming
	// the Seq it expects (a heartbeat ahead of the node's position gets
	// 409 too: something it was sent is lost); 400 for a batch that does
	// not decode; 401 without the token; 413 for a body over the node's
	// limit; 503 while the node closes, and for a batch routed under an
	// epoch newer than the node's layout (it has not loaded it yet: the
	// writer retries).
	PathBatch = PathPrefix + "batch"
	// PathStatus: GET a [Status] (every role serves it).
	PathStatus = PathPrefix + "status"
	// PathExport: GET, on a query node of the current ring, the keys a
	// node gains in a change: query parameters epoch (the layout's, which
	// must be the node's own), dest (the gaining node's name) and skip
	// (comma-separated names of nodes not to count as sources). The
	// answer is a stream of frames, each a uvarint length and a [Batch]
	// of OpPut and OpPutProvider ops, ending with an empty frame (length
	// 0); a stream that ends without it was cut short. The frames may
	// come from a scan shared with the other gaining nodes of the epoch
	// (querynode spools a leave's exports), which changes nothing of the
	// framing.
	PathExport = PathPrefix + "export"
	// PathCopy: POST {"Epoch": n} to a node that gains keys in the change
	// of epoch n: it starts copying them from their owners (202), or says
	// it has (200). Progress is in its Status.
	PathCopy = PathPrefix + "copy"
	// PathDrop: POST {"Epoch": n} to a node once the stable layout n is
	// in force everywhere: it deletes the keys it holds and does not own
	// (202; progress in its Status).
	PathDrop = PathPrefix + "drop"
)

// BatchAnswer is a query node's answer to a batch: the last Seq it has
// applied from the batch's writer and stream, and the last it has made
// durable. A node that commits in groups (querynode's CommitInterval)
// applies a batch at once and makes it durable later, with the batches of
// every writer that came meanwhile; a writer keeps a batch in its outbox
// until it is durable, and sends the next ones meanwhile.
type BatchAnswer struct {
	Applied uint64
	Durable uint64
	// Error says why a batch was refused.
	Error string `json:",omitempty"`
}

// The roles a [Status] names.
const (
	RoleQuery  = "query"
	RoleIngest = "ingest"
	RoleFront  = "frontend"
)

// StatusSource gives a [Coordinator] the statuses of the processes
// without asking each one: the liveness keys of the etcd layout store,
// say, where each process keeps its last status under a lease, so a
// process that dies drops out once its lease expires.
type StatusSource interface {
	// Statuses returns the last status of each live process. Front ends
	// are told apart by Name.
	Statuses(ctx context.Context) ([]Status, error)
	// Changed returns a channel closed at the next change of what
	// Statuses returns, or of the layout in force (nil: never).
	Changed() <-chan struct{}
}

// Status is what each process of the two layers reports at [PathStatus];
// a [Coordinator] reads it to know who has taken an epoch.
type Status struct {
	// Role is [RoleQuery], [RoleIngest] or [RoleFront].
	Role string
	// Name is the process's name in the layout (query and ingest nodes).
	Name string `json:",omitempty"`
	// Epoch is the layout the process acts on.
	Epoch uint64
	// Ready says a query node answers finds: it has heard from every
	// writer of its layout that nothing older waits for it.
	Ready bool `json:",omitempty"`
	// Writers (query node): per writer, the last batch applied.
	Writers map[string]WriterPosition `json:",omitempty"`
	// Copy and Drop (query node) report the last copy and drop.
	Copy *Task `json:",omitempty"`
	Drop *Task `json:",omitempty"`
	// Owners (ingest node): per query node, the outbox towards it.
	Owners map[string]OutboxStatus `json:",omitempty"`
	// OldestEpoch (ingest node) is the oldest epoch a batch still waiting
	// in any outbox was routed under; 0 when every outbox is empty.
	OldestEpoch uint64 `json:",omitempty"`
}

// WriterPosition is where a query node stands with one writer.
type WriterPosition struct {
	Stream  uint64
	Applied uint64
	// Drained: the writer's last message said nothing after Applied was
	// waiting.
	Drained bool
}

// OutboxStatus is an ingest node's outbox towards one query node.
type OutboxStatus struct {
	Pending     int    // batches not yet acknowledged
	Bytes       int64  // their size
	Head        uint64 // last Seq appended
	Acked       uint64 // last Seq acknowledged
	OldestEpoch uint64 `json:",omitempty"` // epoch of the oldest pending batch
	LastError   string `json:",omitempty"`
}

// Task is the progress of a copy or a drop on a query node.
type Task struct {
	Epoch uint64
	Done  bool
	Keys  int64 // multihashes copied or dropped so far
	// Ranges counts the range deletions of a drop by ranges: each
	// removes a ring segment's keys at once, which Keys does not count.
	Ranges int64  `json:",omitempty"`
	Error  string `json:",omitempty"`
}
