package memory

import (
	"bytes"
	"context"
	"iter"
	"slices"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// providerOverhead is charged per provider record by Size besides the bytes
// counted by providerSize.
const providerOverhead = 256

// PutProvider implements [store.ProviderRecords]. It stores a deep copy of
// info.
func (s *Store) PutProvider(ctx context.Context, info store.ProviderInfo) error {
	if err := info.Validate(); err != nil {
		return wrap("put provider", err)
	}
	if err := s.begin(ctx, "put provider"); err != nil {
		return err
	}
	defer s.opMu.RUnlock()
	info = cloneProvider(info)
	n := providerSize(info)
	s.provMu.Lock()
	if old, ok := s.providers[info.AddrInfo.ID]; ok {
		s.provBytes -= providerSize(old)
	}
	s.providers[info.AddrInfo.ID] = info
	s.provBytes += n
	s.provMu.Unlock()
	return nil
}

// Provider implements [store.ProviderRecords]. It returns a deep copy.
func (s *Store) Provider(ctx context.Context, id peer.ID) (store.ProviderInfo, error) {
	if err := s.begin(ctx, "get provider"); err != nil {
		return store.ProviderInfo{}, err
	}
	defer s.opMu.RUnlock()
	s.provMu.RLock()
	info, ok := s.providers[id]
	s.provMu.RUnlock()
	if !ok {
		return store.ProviderInfo{}, wrap("get provider "+id.String(), store.ErrNotFound)
	}
	return cloneProvider(info), nil
}

// Providers implements [store.ProviderRecords]. It yields deep copies from a
// snapshot taken when the iteration starts, and holds no lock while it yields.
func (s *Store) Providers(ctx context.Context) iter.Seq2[store.ProviderInfo, error] {
	return func(yield func(store.ProviderInfo, error) bool) {
		if err := s.begin(ctx, "list providers"); err != nil {
			yield(store.ProviderInfo{}, err)
			return
		}
		s.provMu.RLock()
		infos := make([]store.ProviderInfo, 0, len(s.providers))
		for _, info := range s.providers {
			infos = append(infos, info)
		}
		s.provMu.RUnlock()
		s.opMu.RUnlock()
		for _, info := range infos {
			// Stored records are never modified, only replaced, so the copy
			// can be made outside the lock.
			if !yield(cloneProvider(info), nil) {
				return
			}
		}
	}
}

// DeleteProvider implements [store.ProviderRecords].
func (s *Store) DeleteProvider(ctx context.Context, id peer.ID) error {
	if err := s.begin(ctx, "delete provider"); err != nil {
		return err
	}
	defer s.opMu.RUnlock()
	s.provMu.Lock()
	if old, ok := s.providers[id]; ok {
		s.provBytes -= providerSize(old)
		delete(s.providers, id)
	}
	s.provMu.Unlock()
	return nil
}

func cloneProvider(in store.ProviderInfo) store.ProviderInfo {
	out := in
	out.AddrInfo = cloneAddrInfo(in.AddrInfo)
	out.Publisher = cloneAddrInfo(in.Publisher)
	if ep := in.ExtendedProviders; ep != nil {
		c := &store.ExtendedProviders{
			Providers: cloneAddrInfos(ep.Providers),
			Metadatas: cloneByteSlices(ep.Metadatas),
		}
		if ep.Contextual != nil {
			c.Contextual = make([]store.ContextualExtendedProviders, len(ep.Contextual))
			for i, cp := range ep.Contextual {
				c.Contextual[i] = store.ContextualExtendedProviders{
					Override:  cp.Override,
					ContextID: bytes.Clone(cp.ContextID),
					Providers: cloneAddrInfos(cp.Providers),
					Metadatas: cloneByteSlices(cp.Metadatas),
				}
			}
		}
		out.ExtendedProviders = c
	}
	return out
}

func cloneAddrInfo(a peer.AddrInfo) peer.AddrInfo {
	addrs := slices.Clone(a.Addrs)
	for i := range addrs {
		addrs[i] = slices.Clone(addrs[i])
	}
	return peer.AddrInfo{ID: a.ID, Addrs: addrs}
}

func cloneAddrInfos(as []peer.AddrInfo) []peer.AddrInfo {
	if as == nil {
		return nil
	}
	out := make([]peer.AddrInfo, len(as))
	for i, a := range as {
		out[i] = cloneAddrInfo(a)
	}
	return out
}

func cloneByteSlices(bs [][]byte) [][]byte {
	if bs == nil {
		return nil
	}
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = bytes.Clone(b)
	}
	return out
}

// providerSize estimates the bytes of a stored provider record.
func providerSize(info store.ProviderInfo) int64 {
	n := providerOverhead + addrInfoSize(info.AddrInfo) + addrInfoSize(info.Publisher) +
		int64(len(info.LastError))
	if ep := info.ExtendedProviders; ep != nil {
		for _, a := range ep.Providers {
			n += addrInfoSize(a)
		}
		for _, m := range ep.Metadatas {
			n += int64(len(m))
		}
		for _, cp := range ep.Contextual {
			n += int64(len(cp.ContextID))
			for _, a := range cp.Providers {
				n += addrInfoSize(a)
			}
			for _, m := range cp.Metadatas {
				n += int64(len(m))
			}
		}
	}
	return n
}

func addrInfoSize(a peer.AddrInfo) int64 {
	n := int64(len(a.ID))
	for _, m := range a.Addrs {
		n += 24 + 48*int64(len(m)) // slice header; per component, its bytes and fields
	}
	return n
}
