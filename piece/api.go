package piece

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Codes of unsigned error answers (400, 404 of ingestion-status, 500), in
// the "error" field beside a human "detail".
const (
	CodeInvalidProviderID = "INVALID_PROVIDER_ID"
	CodeInvalidPieceCID   = "INVALID_PIECE_CID"
	CodeInvalidSeed       = "INVALID_SEED"
	CodeInvalidN          = "INVALID_N"
	CodeInternal          = "INTERNAL_ERROR"
)

// HandlerOption configures a [Handler].
type HandlerOption func(*handlerConfig) error

type handlerConfig struct {
	maxN int
	log  *slog.Logger
}

// WithMaxSamples bounds ?n= of a sample request: 1 to 1024, default
// [MaxSamples]. A larger n is a 400, not clamped, so a client never
// mistakes a short answer for a small piece.
func WithMaxSamples(n int) HandlerOption {
	return func(c *handlerConfig) error {
		if n < 1 || n > 1024 {
			return fmt.Errorf("%w: max samples %d out of range 1..1024", ErrInvalidOption, n)
		}
		c.maxN = n
		return nil
	}
}

// WithLogger sets the logger for store failures (500 answers); default
// discards.
func WithLogger(l *slog.Logger) HandlerOption {
	return func(c *handlerConfig) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}

// Handler serves the sampler's REST API over a [Store]:
//
//	GET /sample/{providerId}/{pieceCid}?seed={seed}[&n={n}]
//	GET /ingestion-status/{providerId}
//
// # Sample
//
// providerId is a peer ID (base58 or CID form); pieceCid any CID string
// go-cid parses. seed is required, passes [ValidSeed] once URL-decoded, and
// is the only source of the choice: the answer is [Choose](kept, seed, n)
// over the piece's kept payloads (see [Store.Payloads]). n defaults to 1 and
// is bounded by [WithMaxSamples]. A missing seed is a 400, not a
// server-drawn seed: the seed is the client's nonce against replays (Spark
// uses the round's DRAND randomness), and a signature over a seed the
// client did not choose proves nothing to a third party.
//
//	200 {"samples":["bafy…",…],"pubkey":"…","signature":"…"}
//	404 {"error":"PROVIDER_NOT_FOUND"|"PIECE_NOT_FOUND","pubkey":"…","signature":"…"}
//	400 {"error":"INVALID_PROVIDER_ID"|"INVALID_PIECE_CID"|"INVALID_SEED"|"INVALID_N","detail":"…"}
//
// signature is standard base64 of the server key's signature (Ed25519 for
// keys from [LoadOrCreateKey]) over [SignedBytes]; pubkey is
// [EncodePubKey]. [VerifySample] checks an answer.
//
// # Caching
//
// Every answer carries Cache-Control: no-store. A piece's reservoir changes
// as new ads are walked (a payload with a smaller hash displaces one), and
// a 404 turns into a 200 once the piece is indexed, so the same request may
// rightly get a different signed answer later; a cached copy would put a
// signature on a stale answer. Nothing is cached inside the handler either:
// every answer is read from the store. Only the signing of a byte-identical
// message is remembered (Ed25519 is deterministic, so the remembered
// signature is the one signing would give): many checkers asking for the
// same piece with the same DRAND round's seed cost one signature.
//
// # Ingestion status
//
//	200 {"providerId","providerAddress","ingestionStatus","lastHeadWalkedFrom",
//	     "piecesIndexed","adsWalked","adsMissingPieceCID","entriesNotRetrievable",
//	     "lastError","walkInProgressHead","updated"}
//	404 {"error":"PROVIDER_NOT_FOUND","detail":"provider … is not known"}
//
// lastHeadWalkedFrom and walkInProgressHead are CID strings or null.
type Handler struct {
	store  Store
	sign   signer
	ids    *memo[peer.ID] // decoded providerId strings
	pubkey string         // EncodePubKey(key.GetPublic())
	maxN   int
	log    *slog.Logger
	mux    *http.ServeMux
}

// NewHandler returns the API handler over s, signing with key.
func NewHandler(s Store, key crypto.PrivKey, opts ...HandlerOption) (*Handler, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: NewHandler: nil store", ErrInvalidOption)
	}
	if key == nil {
		return nil, fmt.Errorf("%w: NewHandler: nil key", ErrInvalidOption)
	}
	c := handlerConfig{maxN: MaxSamples, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	pub, err := EncodePubKey(key.GetPublic())
	if err != nil {
		return nil, err
	}
	h := &Handler{store: s, sign: newSigner(key), ids: newMemo[peer.ID](idMemoSize), pubkey: pub, maxN: c.maxN, log: c.log, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /sample/{providerId}/{pieceCid}", func(w http.ResponseWriter, r *http.Request) {
		h.serveSample(w, r, r.PathValue("providerId"), r.PathValue("pieceCid"))
	})
	h.mux.HandleFunc("GET /ingestion-status/{providerId}", h.serveStatus)
	return h, nil
}

// PubKey returns the "pubkey" field of the handler's answers.
func (h *Handler) PubKey() string { return h.pubkey }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p, c, ok := plainSamplePath(r); ok {
		h.serveSample(w, r, p, c)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// plainSamplePath returns the two path values of a GET or HEAD request
// for /sample/{providerId}/{pieceCid} when the mux would route it to
// serveSample with those very values: the path holds no escapes and no "."
// or ".." segment, and exactly two non-empty segments follow "/sample/".
// Any other request goes through the mux. This saves the mux's matching
// on the hot path.
func plainSamplePath(r *http.Request) (providerID, pieceCid string, ok bool) {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.URL.RawPath != "" {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/sample/")
	if !ok {
		return "", "", false
	}
	providerID, pieceCid, ok = strings.Cut(rest, "/")
	if !ok || providerID == "" || pieceCid == "" || strings.IndexByte(pieceCid, '/') >= 0 ||
		providerID == "." || providerID == ".." || pieceCid == "." || pieceCid == ".." {
		return "", "", false
	}
	return providerID, pieceCid, true
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// sampleQuery is a parsed sample request.
type sampleQuery struct {
	provider    peer.ID
	providerStr string // canonical: provider.String()
	piece       cid.Cid
	pieceStr    string // canonical: piece.String()
	seed        string
	n           int
}

// apiError is an unsigned error answer.
type apiError struct {
	status int
	code   string
	detail string
}

// parseSample parses the path values and the raw query of a sample request;
// ids (nil: none) remembers the peer IDs of valid providerId strings.
func parseSample(providerID, pieceCid, rawQuery string, maxN int, ids *memo[peer.ID]) (sampleQuery, *apiError) {
	var q sampleQuery
	p, err := decodePeer(providerID, ids)
	if err != nil {
		return q, &apiError{http.StatusBadRequest, CodeInvalidProviderID, fmt.Sprintf("providerId %q is not a peer ID: %v", clip(providerID), err)}
	}
	q.provider = p
	q.providerStr = providerID
	if !isBase58PeerID(providerID) { // CID form: sign the canonical base58 form
		q.providerStr = p.String()
	}
	if c, ok := decodeCanonicalCID(pieceCid); ok {
		q.piece, q.pieceStr = c, pieceCid // canonical already: no re-encoding
	} else {
		c, err := cid.Decode(pieceCid)
		if err != nil {
			return q, &apiError{http.StatusBadRequest, CodeInvalidPieceCID, fmt.Sprintf("pieceCid %q is not a CID: %v", clip(pieceCid), err)}
		}
		q.piece, q.pieceStr = c, c.String()
	}
	seedSeen, nSeen := false, false
	q.n = 1
	for rawQuery != "" {
		var kv string
		kv, rawQuery, _ = strings.Cut(rawQuery, "&")
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "seed":
			if seedSeen {
				return q, &apiError{http.StatusBadRequest, CodeInvalidSeed, "seed given more than once"}
			}
			seedSeen = true
			s, err := url.QueryUnescape(v)
			if err != nil {
				return q, &apiError{http.StatusBadRequest, CodeInvalidSeed, fmt.Sprintf("seed is not URL-encoded: %v", err)}
			}
			if err := ValidSeed(s); err != nil {
				return q, &apiError{http.StatusBadRequest, CodeInvalidSeed, err.Error()}
			}
			q.seed = s
		case "n":
			if nSeen {
				return q, &apiError{http.StatusBadRequest, CodeInvalidN, "n given more than once"}
			}
			nSeen = true
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxN {
				return q, &apiError{http.StatusBadRequest, CodeInvalidN, fmt.Sprintf("n %q is not an integer in 1..%d", clip(v), maxN)}
			}
			q.n = n
		}
	}
	if !seedSeen {
		return q, &apiError{http.StatusBadRequest, CodeInvalidSeed, "seed is required: GET /sample/{providerId}/{pieceCid}?seed={seed}"}
	}
	return q, nil
}

// isBase58PeerID reports whether s is in the form peer.Decode reads as
// base58 (an identity multihash "1…" or sha2-256 "Qm…"). Base58 is
// canonical, so such an s equals the decoded ID's String.
// idMemoSize bounds the providerId strings a Handler remembers the
// decoding of: two generations of at most this many.
const idMemoSize = 4096

// decodePeer is peer.Decode, remembering in ids (nil: none) the ID of each
// valid string: base58 decoding is a tenth of a sample answer's own work,
// and checkers ask about the same providers over and over. Decoding is a
// pure function, so a remembered ID is never stale.
func decodePeer(s string, ids *memo[peer.ID]) (peer.ID, error) {
	if ids == nil {
		return peer.Decode(s)
	}
	// A read-only view of s: get does not keep it and put copies it.
	k := unsafe.Slice(unsafe.StringData(s), len(s))
	if p, ok := ids.get(k); ok {
		return p, nil
	}
	p, err := peer.Decode(s)
	if err == nil {
		ids.put(k, p)
	}
	return p, err
}

func isBase58PeerID(s string) bool {
	return strings.HasPrefix(s, "Qm") || strings.HasPrefix(s, "1")
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// maxPooledBuf bounds the buffers kept in bufPool, so one huge answer
// does not pin its buffer.
const maxPooledBuf = 64 << 10

// serveSample answers one sample request. The signed message and the
// response are built in one pooled buffer: the message first, then the
// response, whose sample strings are copied from the message (each CID is
// stringified once), then the base64 signature appended in place. Nothing
// is cached between requests: the store is read and the answer signed
// afresh each time.
func (h *Handler) serveSample(w http.ResponseWriter, r *http.Request, providerID, pieceCid string) {
	q, aerr := parseSample(providerID, pieceCid, r.URL.RawQuery, h.maxN, h.ids)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	kept, err := h.store.Payloads(r.Context(), q.provider, q.piece)
	var code string
	switch {
	case err == nil:
	case errors.Is(err, ErrProviderNotFound):
		code = CodeProviderNotFound
	case errors.Is(err, ErrPieceNotFound):
		code = CodePieceNotFound
	default:
		h.log.Error("piece: sample: store failed", "provider", q.providerStr, "cid", q.pieceStr, "err", err)
		writeError(w, &apiError{http.StatusInternalServerError, CodeInternal, "the store failed to answer"})
		return
	}
	var chosenStack [MaxSamples]cid.Cid
	var chosen []cid.Cid
	if code == "" {
		chosen = chooseInto(chosenStack[:0], kept, q.seed, q.n)
	}

	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledBuf {
			bufPool.Put(bp)
		}
	}()
	// The signed message: appendSigned's bytes, with the samples appended
	// straight from the CIDs; spans records where each sample string lies.
	var spanStack [2 * MaxSamples]int
	spans := spanStack[:0]
	msg := (*bp)[:0]
	if code != "" {
		msg = append(msg, `{"error":"`...)
		msg = append(msg, code...)
		msg = append(msg, `","pieceCid":"`...)
	} else {
		msg = append(msg, `{"pieceCid":"`...)
	}
	msg = append(msg, q.pieceStr...)
	msg = append(msg, `","providerId":"`...)
	msg = append(msg, q.providerStr...)
	if code == "" {
		msg = append(msg, `","samples":[`...)
		for i, c := range chosen {
			if i > 0 {
				msg = append(msg, ',')
			}
			msg = append(msg, '"')
			from := len(msg)
			msg = appendCID(msg, c)
			spans = append(spans, from, len(msg))
			msg = append(msg, '"')
		}
		msg = append(msg, `],"seed":"`...)
	} else {
		msg = append(msg, `","seed":"`...)
	}
	msg = append(msg, q.seed...)
	msg = append(msg, `"}`...)

	// The response follows the message in the same buffer.
	out := msg
	if code == "" {
		out = append(out, `{"samples":[`...)
		for i := 0; i < len(spans); i += 2 {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, '"')
			out = append(out, out[spans[i]:spans[i+1]]...)
			out = append(out, '"')
		}
		out = append(out, `],"pubkey":"`...)
	} else {
		out = append(out, `{"error":"`...)
		out = append(out, code...)
		out = append(out, `","pubkey":"`...)
	}
	out = append(out, h.pubkey...)
	out = append(out, `","signature":"`...)
	out, err = h.sign.appendSig(out, out[:len(msg)])
	if err != nil {
		*bp = out[:0]
		h.log.Error("piece: sample: signing failed", "provider", q.providerStr, "cid", q.pieceStr, "err", err)
		writeError(w, &apiError{http.StatusInternalServerError, CodeInternal, "signing failed"})
		return
	}
	out = append(out, "\"}\n"...)
	*bp = out[:0] // keep the grown buffer
	body := out[len(msg):]

	hd := w.Header()
	hd["Content-Type"] = jsonType
	hd["Cache-Control"] = noStore
	if len(body) > smallBody {
		// Below smallBody net/http sets the same Content-Length itself,
		// without allocating.
		hd["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	if code != "" {
		w.WriteHeader(http.StatusNotFound)
	}
	_, _ = w.Write(body)
}

// smallBody is a body size that net/http buffers whole (its limit is 2048
// bytes) and so sends with a Content-Length of its own.
const smallBody = 2000

var (
	jsonType = []string{"application/json"}
	noStore  = []string{"no-store"}
)

// statusJSON is the body of GET /ingestion-status/{providerId}.
type statusJSON struct {
	ProviderID            string  `json:"providerId"`
	ProviderAddress       string  `json:"providerAddress"`
	IngestionStatus       string  `json:"ingestionStatus"`
	LastHeadWalkedFrom    *string `json:"lastHeadWalkedFrom"`
	PiecesIndexed         int64   `json:"piecesIndexed"`
	AdsWalked             int64   `json:"adsWalked"`
	AdsMissingPieceCID    int64   `json:"adsMissingPieceCID"`
	EntriesNotRetrievable int64   `json:"entriesNotRetrievable"`
	LastError             string  `json:"lastError"`
	WalkInProgressHead    *string `json:"walkInProgressHead"`
	Updated               string  `json:"updated,omitempty"` // RFC 3339
}

func cidOrNull(c cid.Cid) *string {
	if !c.Defined() {
		return nil
	}
	s := c.String()
	return &s
}

func (h *Handler) serveStatus(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("providerId")
	p, err := peer.Decode(raw)
	if err != nil {
		writeError(w, &apiError{http.StatusBadRequest, CodeInvalidProviderID, fmt.Sprintf("providerId %q is not a peer ID: %v", clip(raw), err)})
		return
	}
	st, err := h.store.Status(r.Context(), p)
	switch {
	case errors.Is(err, ErrProviderNotFound):
		writeError(w, &apiError{http.StatusNotFound, CodeProviderNotFound, fmt.Sprintf("provider %s is not known", p)})
		return
	case err != nil:
		h.log.Error("piece: ingestion-status: store failed", "provider", p.String(), "err", err)
		writeError(w, &apiError{http.StatusInternalServerError, CodeInternal, "the store failed to answer"})
		return
	}
	body := statusJSON{
		ProviderID:            p.String(),
		ProviderAddress:       st.Address,
		IngestionStatus:       st.Text,
		LastHeadWalkedFrom:    cidOrNull(st.LastHead),
		PiecesIndexed:         st.PiecesIndexed,
		AdsWalked:             st.AdsWalked,
		AdsMissingPieceCID:    st.AdsWithoutPiece,
		EntriesNotRetrievable: st.EntriesUnretrievable,
		LastError:             st.LastError,
		WalkInProgressHead:    cidOrNull(st.Head),
	}
	if !st.Updated.IsZero() {
		body.Updated = st.Updated.UTC().Format("2006-01-02T15:04:05.999999999Z07:00")
	}
	writeJSON(w, http.StatusOK, body)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, struct {
		Error  string `json:"error"`
		Detail string `json:"detail"`
	}{e.code, e.detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for the types above
		b = []byte(`{"error":"INTERNAL_ERROR","detail":"encoding the answer failed"}`)
		status = http.StatusInternalServerError
	}
	b = append(b, '\n')
	hd := w.Header()
	hd["Content-Type"] = jsonType
	hd["Cache-Control"] = noStore
	hd["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
