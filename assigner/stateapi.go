package assigner

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Assignments is the body of GET /assignments on [Service.StateHandler].
type Assignments struct {
	Replication       int
	PresetReplication int
	Publishers        []PublisherSnapshot
	// Handoffs are the incomplete handoffs.
	Handoffs []HandoffSnapshot
}

// StateHandler is the read-only state API, JSON from [State.Snapshot]:
//
//	GET /assignments  Assignments: every publisher's holders, pending
//	                  requests and waiting reason; incomplete handoffs
//	GET /indexers     [IndexerSnapshot…]: each indexer's status,
//	                  assignments, pending requests, refusals
//
// 503 while Run is not running, 405 for another method, 404 for another
// path. It changes nothing; serve it on a private listener.
func (s *Service) StateHandler() http.Handler {
	mux := http.NewServeMux()
	serve := func(pick func(Snapshot) any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			snap, err := s.Snapshot(r.Context())
			if err != nil {
				code := http.StatusServiceUnavailable
				if !errors.Is(err, ErrNotRunning) {
					code = http.StatusInternalServerError
				}
				http.Error(w, err.Error(), code)
				return
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(pick(snap))
		}
	}
	mux.Handle("GET /assignments", serve(func(snap Snapshot) any {
		return Assignments{Replication: snap.Replication, PresetReplication: snap.PresetReplication,
			Publishers: nonNil(snap.Publishers), Handoffs: nonNil(snap.Handoffs)}
	}))
	mux.Handle("GET /indexers", serve(func(snap Snapshot) any { return nonNil(snap.Indexers) }))
	return mux
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
