// Package etcdlayout keeps a keyspace layer's control plane on etcd: the
// layout (one key), the processes' statuses (one key per process, under
// its lease) and the coordinator's election. It is the
// [keyspace.LayoutStore] for layers past one machine; [keyspace.FileStore]
// stays for one host.
//
// # Keys
//
// Under a prefix that names the layer (several layers may share a
// cluster):
//
//	<prefix>layout                  the layout in force, JSON
//	<prefix>live/<role>/<name>      a process's keyspace.Status, bound to its lease
//	<prefix>coordinator/<lease>     the coordinators' election (etcd's concurrency.Election)
//
// # Epochs are transactions
//
// [Store.Publish] writes the next layout in one transaction that compares
// the layout key's ModRevision with the revision the coordinator read, so
// of two coordinators that read the same epoch only one publishes the
// next. A coordinator publishes through its [Leadership]
// ([Leadership.Store]), whose transaction also compares that its election
// key still exists: a coordinator that was paused past its term and woke
// up cannot publish over its successor ([ErrNotLeader]).
//
// # Watches instead of SIGHUP
//
// [Store.Watch] hands a process the layout in force and then each one
// published, from an etcd watch that requires a leader (a client cut off
// from the quorum has its watch cancelled and starts again, through
// another endpoint when it has one).
//
// # Liveness without polling
//
// Every process joins with [Store.Join]: its status is written under a
// lease, and again whenever it changes, so the coordinator reads every
// process's epoch and progress from etcd ([Store.Statuses], woken by
// [Store.Changed]) instead of asking each one. A process that dies drops
// out when its lease expires; one that cannot reach etcd knows it may
// have dropped out ([Presence.Fenced]) no later than the lease can
// expire, and a front end then marks its answers partial rather than read
// an epoch that may be two behind.
//
// # Taking over
//
// The coordinator keeps nothing but the layout: its next step is a pure
// function of the layout's recorded phase and the statuses
// ([keyspace.NextAction]). So when the elected coordinator dies, the next
// campaigner wins once its term's lease expires and drives the same change
// on from the phase the layout records; copy and drop requests it repeats
// are answered "already done" by the query nodes.
//
// # URLs
//
// Programs name an etcd layout as etcd://HOST:PORT[,HOST:PORT...]/PREFIX
// ([ParseURL], [Dial]) wherever they take a layout file.
package etcdlayout
