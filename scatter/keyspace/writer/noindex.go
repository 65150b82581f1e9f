package writer

import (
	"fmt"
	"net/http"
)

// NoIndex wraps h, a handler of an ingest node's find API, for a node
// whose store is the Writer and so holds no index ([ErrNoIndex]): a
// request whose path lookup reports as a lookup in the index is answered
// 421 Misdirected Request, with a body that names the layout's epoch and
// says to ask the front end or the query nodes; every other request, and
// every CORS preflight (OPTIONS), goes to h. The answer allows any origin
// and is not to be cached (the layout changes). lookup is the caller's,
// as it knows the paths of its API.
func (w *Writer) NoIndex(h http.Handler, lookup func(path string) bool) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions || !lookup(r.URL.Path) {
			h.ServeHTTP(rw, r)
			return
		}
		hdr := rw.Header()
		hdr.Set("Access-Control-Allow-Origin", "*")
		hdr.Set("Cache-Control", "no-store")
		http.Error(rw, fmt.Sprintf("this is an ingest node of a keyspace-sharded pool: it holds no index "+
			"(its multihashes live on the query nodes of layout epoch %d); ask the pool's front end, "+
			"or the query nodes that own the key", w.Layout().Epoch), http.StatusMisdirectedRequest)
	})
}
