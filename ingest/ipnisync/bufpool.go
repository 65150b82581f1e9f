package ipnisync

import (
	"math/bits"
	"sync"
)

// The buffers of blocks, reused. A walker that has indexed an entry chunk
// gives its bytes back ([Client.ReleaseBlock]), and the next body of a
// like size is read into them: an indexer fetching entry chunks at full
// rate otherwise allocates every byte it fetches, which was 40% of what an
// ingesting node allocated and set the pace of its garbage collector.

const (
	minBufShift = 12 // the smallest class: 4 KiB
	bufClasses  = 11 // up to 4 MiB, the largest block by default
)

// bufPools holds released buffers by class: class k those of capacity
// 4 KiB << k exactly.
var bufPools [bufClasses]sync.Pool

// bufClass returns the class of buffers large enough for n bytes, or -1
// for n larger than the largest.
func bufClass(n int64) int {
	if n <= 1<<minBufShift {
		return 0
	}
	k := bits.Len64(uint64(n-1)) - minBufShift
	if k >= bufClasses {
		return -1
	}
	return k
}

// getBuf returns a buffer of length n: a released one of its class, or a
// new one with the class's capacity.
func getBuf(n int64) []byte {
	k := bufClass(n)
	if k < 0 {
		return make([]byte, n)
	}
	if p, ok := bufPools[k].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<(minBufShift+k))
}

// putBuf keeps b for reuse if its capacity is that of a class (a buffer
// getBuf made); others are left to the garbage collector.
func putBuf(b []byte) {
	k := bufClass(int64(cap(b)))
	if k < 0 || cap(b) != 1<<(minBufShift+k) {
		return
	}
	b = b[:0]
	bufPools[k].Put(&b)
}
