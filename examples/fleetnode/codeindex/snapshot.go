package codeindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"
)

// A snapshot is one built Index on disk, so that a node that wins a repo
// at a commit another node (or itself, before) already indexed loads it
// instead of cloning and indexing. The file, little-endian throughout:
//
//	magic     "IKFLTSNP"
//	version   u32 (snapshotVersion)
//	commit    u32 length, bytes
//	files     u32 count; per file: u32 path length, u32 data length, path, data
//	lines     u32 count; 16 bytes each: file, line number, start, end (u32)
//	postings  u32 count; u32 each (line numbers, every posting list in one arena)
//	grams     u32 count; per trigram, ascending: u32 trigram, u32 offset, u32 length
//	size      i64 (Index.Size)
//	sum       u64 (the index's checksum taken at build, see Index.Verify)
//	crc       u64: CRC-64 (ECMA) of every byte before it
//
// A load checks the file's CRC, decodes it, and checks the decoded index
// against the checksum taken at build (the on-load check): a flipped byte
// anywhere, a truncated file or a decoder that went wrong is ErrCorrupt,
// and the caller indexes from git instead. A file of another version is
// ErrVersion, and is ignored the same way.
const (
	snapshotMagic   = "IKFLTSNP"
	snapshotVersion = 1
	snapshotExt     = ".snap"
)

// ErrVersion is returned for a snapshot written in a format this
// binary does not read.
var ErrVersion = errors.New("snapshot of an unknown version")

var le = binary.LittleEndian

// Encode returns ix at commit as a snapshot file's bytes.
func Encode(ix *Index, commit string) []byte {
	n := len(snapshotMagic) + 4 + 4 + len(commit) + 4 + 4 + len(ix.lines)*16 + 4 + len(ix.postings)*4 + 4 + len(ix.grams)*12 + 8 + 8 + 8
	for _, f := range ix.files {
		n += 8 + len(f.path) + len(f.data)
	}
	b := make([]byte, 0, n)
	u32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	b = append(b, snapshotMagic...)
	u32(snapshotVersion)
	u32(uint32(len(commit)))
	b = append(b, commit...)
	u32(uint32(len(ix.files)))
	for _, f := range ix.files {
		u32(uint32(len(f.path)))
		u32(uint32(len(f.data)))
		b = append(b, f.path...)
		b = append(b, f.data...)
	}
	u32(uint32(len(ix.lines)))
	for _, l := range ix.lines {
		u32(l.file)
		u32(l.num)
		u32(l.start)
		u32(l.end)
	}
	u32(uint32(len(ix.postings)))
	for _, p := range ix.postings {
		u32(p)
	}
	grams := make([]uint32, 0, len(ix.grams))
	for g := range ix.grams {
		grams = append(grams, g)
	}
	slices.Sort(grams)
	u32(uint32(len(grams)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(ix.postings)))
	for _, g := range grams {
		p := ix.grams[g]
		u32(g)
		u32(uint32((uintptr(unsafe.Pointer(unsafe.SliceData(p))) - base) / 4))
		u32(uint32(len(p)))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(ix.size))
	b = binary.LittleEndian.AppendUint64(b, ix.sum)
	return binary.LittleEndian.AppendUint64(b, crc64.Checksum(b, crcTable))
}

// snapReader decodes a snapshot's fields, remembering the first error.
type snapReader struct {
	b   []byte
	err error
}

func (r *snapReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: snapshot truncated in %s", ErrCorrupt, what)
	}
	r.b = nil
}

func (r *snapReader) bytes(n uint64, what string) []byte {
	if r.err != nil || uint64(len(r.b)) < n {
		r.fail(what)
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *snapReader) u32(what string) uint32 {
	b := r.bytes(4, what)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *snapReader) u64(what string) uint64 {
	b := r.bytes(8, what)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// count reads a count of records of width bytes each and checks that
// that many can follow.
func (r *snapReader) count(width int, what string) int {
	n := r.u32(what)
	if r.err == nil && uint64(n)*uint64(width) > uint64(len(r.b)) {
		r.fail(what)
		return 0
	}
	return int(n)
}

// Decode decodes a snapshot file and returns its index and
// commit. The error wraps ErrCorrupt when the
// file does not check, ErrVersion when it is of another version.
func Decode(b []byte) (*Index, string, error) {
	if len(b) < len(snapshotMagic)+4+8 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, "", fmt.Errorf("%w: not a snapshot (no %q at its start)", ErrCorrupt, snapshotMagic)
	}
	body, tail := b[:len(b)-8], b[len(b)-8:]
	if got, want := crc64.Checksum(body, crcTable), binary.LittleEndian.Uint64(tail); got != want {
		return nil, "", fmt.Errorf("%w: snapshot CRC-64 %016x, %016x when written", ErrCorrupt, got, want)
	}
	r := &snapReader{b: body[len(snapshotMagic):]}
	if v := r.u32("version"); v != snapshotVersion {
		return nil, "", fmt.Errorf("%w: version %d, this binary reads %d", ErrVersion, v, snapshotVersion)
	}
	commit := string(r.bytes(uint64(r.u32("commit")), "commit"))
	ix := &Index{}
	nfiles := r.count(8, "files")
	ix.files = make([]indexedFile, 0, nfiles)
	for range nfiles {
		pl, dl := r.u32("file"), r.u32("file")
		path := r.bytes(uint64(pl), "file path")
		data := r.bytes(uint64(dl), "file data")
		if r.err != nil {
			break
		}
		// A copy, so that the file's buffer (with its encoded lines and
		// postings) is not kept alive by the index.
		ix.files = append(ix.files, indexedFile{path: string(path), data: slices.Clone(data)})
	}
	nlines := r.count(16, "lines")
	lb := r.bytes(uint64(nlines)*16, "lines")
	ix.lines = make([]lineRef, nlines)
	for i := range ix.lines {
		w := lb[16*i : 16*i+16]
		ix.lines[i] = lineRef{file: le.Uint32(w), num: le.Uint32(w[4:]), start: le.Uint32(w[8:]), end: le.Uint32(w[12:])}
	}
	npost := r.count(4, "postings")
	pb := r.bytes(uint64(npost)*4, "postings")
	ix.postings = make([]uint32, npost)
	for i := range ix.postings {
		ix.postings[i] = le.Uint32(pb[4*i:])
	}
	ngrams := r.count(12, "grams")
	ix.grams = make(map[uint32][]uint32, ngrams)
	for range ngrams {
		g, off, n := r.u32("grams"), r.u32("grams"), r.u32("grams")
		if r.err != nil {
			break
		}
		if uint64(off)+uint64(n) > uint64(len(ix.postings)) || n == 0 {
			return nil, "", fmt.Errorf("%w: snapshot trigram %06x's list [%d, +%d) outside the %d postings", ErrCorrupt, g, off, n, len(ix.postings))
		}
		ix.grams[g] = ix.postings[off : off+n : off+n]
	}
	// Every reference a search follows must lie inside what it refers to.
	for _, l := range ix.lines {
		if int(l.file) >= len(ix.files) || l.start > l.end || int(l.end) > len(ix.files[l.file].data) {
			return nil, "", fmt.Errorf("%w: snapshot line record %+v outside its file", ErrCorrupt, l)
		}
	}
	for _, p := range ix.postings {
		if int(p) >= len(ix.lines) {
			return nil, "", fmt.Errorf("%w: snapshot posting %d beyond the %d lines", ErrCorrupt, p, len(ix.lines))
		}
	}
	ix.size = int64(r.u64("size"))
	ix.sum = r.u64("sum")
	if r.err != nil {
		return nil, "", r.err
	}
	if len(r.b) != 0 {
		return nil, "", fmt.Errorf("%w: %d bytes after the snapshot's fields", ErrCorrupt, len(r.b))
	}
	if want := ix.accountedSize(); ix.size != want {
		return nil, "", fmt.Errorf("%w: snapshot size %d, its index accounts for %d", ErrCorrupt, ix.size, want)
	}
	if err := ix.Verify(); err != nil {
		return nil, "", fmt.Errorf("on load: %w", err)
	}
	return ix, commit, nil
}

// Dir is a directory of index snapshots, one file per repo and commit,
// which the nodes of a fleet may share: every write is a new file renamed
// into place, so a reader sees a whole file or none. A node killed while
// writing leaves a temporary file (".tmp-*"), never a torn snapshot.
type Dir string

// ValidCommit reports whether commit is a hexadecimal object name (SHA-1
// or SHA-256), the only names a snapshot's file name takes.
func ValidCommit(commit string) bool {
	if len(commit) != 40 && len(commit) != 64 {
		return false
	}
	return strings.Trim(commit, "0123456789abcdef") == ""
}

// File returns the path of the snapshot of repo at commit.
func (d Dir) File(repo, commit string) string {
	return filepath.Join(string(d), url.PathEscape(repo)+"@"+commit+snapshotExt)
}

// Load returns the snapshot of repo at commit; fs.ErrNotExist if there is
// none. A snapshot that does not check (ErrCorrupt, ErrVersion,
// or another commit inside) is removed, so that the next build replaces
// it, and its error returned.
func (d Dir) Load(repo, commit string) (*Index, error) {
	if !ValidCommit(commit) {
		return nil, fmt.Errorf("snapshot of %s: commit %q is not an object name: %w", repo, commit, fs.ErrNotExist)
	}
	p := d.File(repo, commit)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	ix, got, err := Decode(b)
	if err == nil && got != commit {
		err = fmt.Errorf("%w: snapshot of commit %s in the file of %s", ErrCorrupt, got, commit)
	}
	if err != nil {
		_ = os.Remove(p)
		return nil, fmt.Errorf("snapshot %s: %w", p, err)
	}
	return ix, nil
}

// Store writes ix as the snapshot of repo at commit (a temporary file
// renamed into place) and removes the repo's snapshots of other commits.
func (d Dir) Store(repo, commit string, ix *Index) error {
	if !ValidCommit(commit) {
		return fmt.Errorf("snapshot of %s: commit %q is not an object name", repo, commit)
	}
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	tmp, err := os.CreateTemp(string(d), ".tmp-*")
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	_, werr := tmp.Write(Encode(ix, commit))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	p := d.File(repo, commit)
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("snapshot %s: %w", p, werr)
	}
	old, _ := filepath.Glob(filepath.Join(string(d), globEscape(url.PathEscape(repo))+"@*"+snapshotExt))
	for _, o := range old {
		if o != p {
			_ = os.Remove(o)
		}
	}
	return nil
}

// globEscape escapes the pattern characters of filepath.Match in s.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
