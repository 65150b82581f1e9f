package codeindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unsafe"
)

// Limits of the index and of queries.
const (
	MaxFileSize  = 1 << 20 // bytes; larger files are not indexed
	MaxQueryLen  = 256     // bytes of a query
	DefaultLimit = 100     // matches of a Search with limit ≤ 0
	MaxLimit     = 1000    // the most matches a node's API returns
	binarySniff  = 8000    // bytes searched for a NUL, as git does
)

// Costs used by Index.Size, in bytes: a Go map entry of uint32 → []uint32
// with its share of buckets, a file and a line record.
const (
	gramEntryCost = 48
	fileCost      = 64
	lineCost      = 16
)

// ErrBadQuery is wrapped by the errors of queries the index cannot answer.
var ErrBadQuery = errors.New("bad query")

// ErrCorrupt is wrapped by Verify's error: the index no longer matches
// the checksum taken when it was built.
var ErrCorrupt = errors.New("index corrupt")

// Match is one line that contains the query, as a node's API returns it.
type Match struct {
	Path string `json:"path"`
	Line int    `json:"line"` // from 1
	Text string `json:"text"`
}

// File is one file of a tree, given to New.
type File struct {
	Path string
	Data []byte
}

// Index is an in-memory substring index of a tree of text files: each
// trigram (three consecutive bytes) maps to the lines that contain it.
// A query of three bytes or more intersects the posting lists of its
// trigrams and checks each candidate line; a shorter query scans every
// line. Lines never contain the newline, so neither may a query. An Index
// is immutable once built and safe for concurrent use.
type Index struct {
	files []indexedFile
	lines []lineRef
	grams map[uint32][]uint32 // trigram → ascending line numbers in lines
	size  int64
	// postings is the arena that holds every posting list of grams; sum
	// is the checksum of everything a search reads, taken at build.
	postings []uint32
	sum      uint64
}

type indexedFile struct {
	path string
	data []byte
}

type lineRef struct {
	file, num, start, end uint32
}

// IsBinary reports whether data looks binary: a NUL in its first bytes.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0
}

// New indexes files, skipping binary ones (IsBinary) and those over
// MaxFileSize.
func New(files []File) *Index {
	files = slices.Clone(files)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	ix := &Index{}
	counts := make(map[uint32]uint32)
	last := make(map[uint32]uint32) // trigram → 1 + the last line counted
	for _, f := range files {
		if len(f.Data) > MaxFileSize || IsBinary(f.Data) {
			continue
		}
		fi := uint32(len(ix.files))
		ix.files = append(ix.files, indexedFile{path: f.Path, data: f.Data})
		num := uint32(1)
		for start := 0; start < len(f.Data); {
			end := bytes.IndexByte(f.Data[start:], '\n')
			if end < 0 {
				end = len(f.Data)
			} else {
				end += start
			}
			li := uint32(len(ix.lines))
			ix.lines = append(ix.lines, lineRef{file: fi, num: num, start: uint32(start), end: uint32(end)})
			line := f.Data[start:end]
			for i := 0; i+3 <= len(line); i++ {
				g := gram(line[i:])
				if l, ok := last[g]; ok && l == li+1 {
					continue // already counted for this line
				}
				last[g] = li + 1
				counts[g]++
			}
			num++
			start = end + 1
		}
	}
	// One arena for every posting list, so capacities are exact.
	var total uint32
	for _, c := range counts {
		total += c
	}
	arena := make([]uint32, 0, total)
	ix.postings = arena[:total]
	ix.grams = make(map[uint32][]uint32, len(counts))
	for g, c := range counts {
		ix.grams[g] = arena[len(arena) : len(arena) : len(arena)+int(c)]
		arena = arena[:len(arena)+int(c)]
	}
	for li, l := range ix.lines {
		line := ix.files[l.file].data[l.start:l.end]
		for i := 0; i+3 <= len(line); i++ {
			g := gram(line[i:])
			p := ix.grams[g]
			if n := len(p); n > 0 && p[n-1] == uint32(li) {
				continue
			}
			ix.grams[g] = append(p, uint32(li))
		}
	}
	ix.size = ix.accountedSize()
	ix.sum = ix.checksum()
	return ix
}

// Estimate guesses the Size of New(files) without building it: the
// accounted bytes of the text files' contents, paths and lines, and about
// four bytes of postings per byte of text (the average of generated and
// source text), plus a fixed 64 KiB. A catalog uses it for a row's Size
// and MinBid before any node has built the index; a node reports the
// exact size once it has.
func Estimate(files []File) int64 {
	var text, lines, n int64
	for _, f := range files {
		n++
		if len(f.Data) > MaxFileSize || IsBinary(f.Data) {
			continue
		}
		text += int64(len(f.Data))
		lines += int64(bytes.Count(f.Data, []byte{'\n'})) + 1
	}
	return text*5 + lines*lineCost + n*fileCost + 64<<10
}

// accountedSize is what Size reports: file contents and paths, a record
// per file and per line, 4 bytes per posting and a map entry per trigram.
func (ix *Index) accountedSize() int64 {
	var n int64
	for _, f := range ix.files {
		n += fileCost + int64(len(f.path)) + int64(len(f.data))
	}
	return n + lineCost*int64(len(ix.lines)) + 4*int64(len(ix.postings)) + gramEntryCost*int64(len(ix.grams))
}

// crcTable is the checksum's polynomial table.
var crcTable = crc64.MakeTable(crc64.ECMA)

// checksum hashes everything a search reads: each file's path and bytes,
// the line records, the posting lists' arena, and where in the arena each
// trigram's list lies (summed over the map, whose order is random).
func (ix *Index) checksum() uint64 {
	h := crc64.New(crcTable)
	var n [8]byte
	for _, f := range ix.files {
		binary.LittleEndian.PutUint64(n[:], uint64(len(f.path))<<32|uint64(len(f.data)))
		h.Write(n[:])
		h.Write([]byte(f.path))
		h.Write(f.data)
	}
	if len(ix.lines) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ix.lines))), len(ix.lines)*int(unsafe.Sizeof(lineRef{}))))
	}
	if len(ix.postings) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ix.postings))), 4*len(ix.postings)))
	}
	var lists uint64
	base := uintptr(unsafe.Pointer(unsafe.SliceData(ix.postings)))
	for g, p := range ix.grams {
		off := (uintptr(unsafe.Pointer(unsafe.SliceData(p))) - base) / 4
		lists += mix64(uint64(g)) ^ mix64(uint64(off)<<32|uint64(len(p)))
	}
	return h.Sum64() ^ mix64(lists)
}

// mix64 is splitmix64's finalizer: each bit of x moves about half the
// bits of the result.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Verify recomputes the index's checksum and returns an error wrapping
// ErrCorrupt if it differs from the one taken at build: a byte of a file,
// a line record or a posting list changed in memory since.
func (ix *Index) Verify() error {
	if got := ix.checksum(); got != ix.sum {
		return fmt.Errorf("%w: checksum %016x, %016x when built", ErrCorrupt, got, ix.sum)
	}
	return nil
}

func gram(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// FromDir indexes the regular files under root, skipping the .git
// directory, symbolic links, binary files and files over MaxFileSize.
// Paths are relative to root, with forward slashes.
func FromDir(root string) (*Index, error) {
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > MaxFileSize {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", root, err)
	}
	return New(files), nil
}

// Size returns the index's in-memory size in bytes as accounted: file
// contents and paths, a record per file and per line, 4 bytes per posting
// and a map entry per trigram.
func (ix *Index) Size() int64 { return ix.size }

// Files returns the number of files indexed.
func (ix *Index) Files() int { return len(ix.files) }

// CheckQuery returns an error wrapping ErrBadQuery for a query Search
// refuses: empty, over MaxQueryLen bytes, or with a line break.
func CheckQuery(q string) error {
	switch {
	case q == "":
		return fmt.Errorf("empty query: %w", ErrBadQuery)
	case len(q) > MaxQueryLen:
		return fmt.Errorf("query of %d bytes, more than %d: %w", len(q), MaxQueryLen, ErrBadQuery)
	case strings.ContainsAny(q, "\n\r"):
		return fmt.Errorf("query contains a line break: %w", ErrBadQuery)
	}
	return nil
}

// Search returns the lines that contain q, in path and line order, at most
// limit of them (limit ≤ 0: DefaultLimit), and whether more were left
// out. A line is reported once however many times it contains q.
func (ix *Index) Search(q string, limit int) ([]Match, bool, error) {
	if err := CheckQuery(q); err != nil {
		return nil, false, err
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	qb := []byte(q)
	var out []Match
	check := func(li uint32) bool {
		l := ix.lines[li]
		f := ix.files[l.file]
		line := f.data[l.start:l.end]
		if !bytes.Contains(line, qb) {
			return true
		}
		if len(out) == limit {
			return false
		}
		out = append(out, Match{Path: f.path, Line: int(l.num), Text: string(line)})
		return true
	}
	if len(qb) < 3 {
		for li := range ix.lines {
			if !check(uint32(li)) {
				return out, true, nil
			}
		}
		return out, false, nil
	}
	var lists [][]uint32
	seen := make(map[uint32]bool)
	for i := 0; i+3 <= len(qb); i++ {
		g := gram(qb[i:])
		if seen[g] {
			continue
		}
		seen[g] = true
		p, ok := ix.grams[g]
		if !ok {
			return nil, false, nil
		}
		lists = append(lists, p)
	}
	sort.Slice(lists, func(i, j int) bool { return len(lists[i]) < len(lists[j]) })
	cands := lists[0]
	for _, p := range lists[1:] {
		cands = intersect(cands, p)
		if len(cands) == 0 {
			return nil, false, nil
		}
	}
	for _, li := range cands {
		if !check(li) {
			return out, true, nil
		}
	}
	return out, false, nil
}

// intersect returns the values in both ascending lists a and b, where a
// is the shorter: a binary search of b for each value of a.
func intersect(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a))
	for _, v := range a {
		i, ok := slices.BinarySearch(b, v)
		if ok {
			out = append(out, v)
		}
		b = b[i:]
		if len(b) == 0 {
			break
		}
	}
	return out
}

// Grep is the brute-force reference of Index.Search: every line of
// every text file that contains q, in path and line order.
func Grep(files []File, q string) []Match {
	files = slices.Clone(files)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var out []Match
	for _, f := range files {
		if len(f.Data) > MaxFileSize || IsBinary(f.Data) {
			continue
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n") {
			if len(f.Data) > 0 && strings.Contains(line, q) {
				out = append(out, Match{Path: f.Path, Line: i + 1, Text: line})
			}
		}
	}
	return out
}
