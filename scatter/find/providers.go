package find

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"

	"github.com/indexkit/indexkit/internal/httperr"
)

// ProviderRecords reads a GET /providers answer from r: a JSON array of
// [ProviderInfo] records, or null (nothing listed). It yields each
// record's JSON as it is read, so that a caller holds only the records it
// keeps, and can look at a record (its Publisher, say) before decoding it
// into a ProviderInfo, or skip one it cannot decode. An answer that is not
// a JSON array, or breaks off, ends with an error, yielded once, last,
// with a nil record; the error wraps the reader's error when r failed,
// and quotes nothing of the answer (a handoff's caller reads it).
//
// The /providers answers of this package's [Handler], of storetheindex and
// of indexstar all read this way; handoff and piece read theirs through it.
func ProviderRecords(r io.Reader) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		dec := json.NewDecoder(r)
		tok, err := dec.Token()
		if err != nil {
			yield(nil, fmt.Errorf("decoding answer: %w", httperr.JSONError(err)))
			return
		}
		if tok == nil { // null: nothing listed
			return
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			yield(nil, fmt.Errorf("decoding answer: want a JSON array of provider records, got %s", jsonKind(tok)))
			return
		}
		for i := 0; dec.More(); i++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				yield(nil, fmt.Errorf("decoding provider record %d: %w", i, httperr.JSONError(err)))
				return
			}
			if !yield(raw, nil) {
				return
			}
		}
		if _, err := dec.Token(); err != nil { // the closing ]
			yield(nil, fmt.Errorf("decoding answer: %w", httperr.JSONError(err)))
		}
	}
}

// jsonKind names the kind of a json.Token, not its value: a string token
// can be as long as the answer.
func jsonKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim: // '{': the only other opening token
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
