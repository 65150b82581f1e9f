package fleetnode

import (
	"github.com/indexkit/indexkit/lease"
)

// Store is what a fleet needs of its lease store: lease/redis and
// lease/etcd implement it.
type Store interface {
	lease.Store
	lease.Lister
	lease.MaxBidsSetter
}

// Backend is a fleet's coordination store: the lease store of its
// catalog and the side tables beside it, both under one key prefix.
// Package fleetnode/redis keeps them in Redis, fleetnode/etcd in etcd;
// the node imports neither, so a program that embeds it links only the
// client it uses.
type Backend interface {
	// NewStore returns the lease store of the fleet with prefix, with
	// opts (the node's timing and hooks).
	NewStore(prefix string, opts ...lease.Option) (Store, error)
	// Tables returns the side tables of the fleet with prefix.
	Tables(prefix string) Tables
}
