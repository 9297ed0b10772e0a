package providersim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// objectAPI is what the doubles of providers' read APIs (PayPal's,
// GoCardless's) share: an HTTP server on a loopback port holding objects
// as JSON by kind and ID, that answers 503 on demand and counts its
// reads.
type objectAPI struct {
	name     string
	mu       sync.Mutex
	objects  map[string]json.RawMessage
	failNext int
	reads    atomic.Int64
	srv      *http.Server
	ln       net.Listener
}

// start serves mux on a free loopback port.
func (o *objectAPI) start(name string, mux *http.ServeMux) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	o.name, o.ln, o.objects = name, ln, map[string]json.RawMessage{}
	o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = o.srv.Serve(ln) }()
	return nil
}

// URL is the double's base URL.
func (o *objectAPI) URL() string { return "http://" + o.ln.Addr().String() }

// FailNext makes the next n reads answer 503.
func (o *objectAPI) FailNext(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failNext = n
}

// Reads counts the requests for objects, refused and failed ones
// included.
func (o *objectAPI) Reads() int { return int(o.reads.Load()) }

// Close stops the double.
func (o *objectAPI) Close() error {
	if err := o.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("providersim: %s: %w", o.name, err)
	}
	return nil
}

// set stores v as the object kind/id.
func (o *objectAPI) set(kind, id string, v any) {
	data, _ := json.Marshal(v) // the doubles' own types always marshal
	o.mu.Lock()
	defer o.mu.Unlock()
	o.objects[kind+"/"+id] = data
}

// read returns the object kind/id and 200, or an injected 503, or 404.
func (o *objectAPI) read(kind, id string) (json.RawMessage, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failNext > 0 {
		o.failNext--
		return nil, http.StatusServiceUnavailable
	}
	data, ok := o.objects[kind+"/"+id]
	if !ok {
		return nil, http.StatusNotFound
	}
	return data, http.StatusOK
}

// putter is an object a double takes by PUT: complete says whether it
// has what the provider always sends, and setID gives it the path's ID.
type putter interface {
	complete() bool
	setID(id string)
}

// put answers PUT .../{id} with a T as JSON, of at most 64 KiB: stored as
// the object kind/{id} (204), or refused (400) with refusal's body.
func put[T any, P interface {
	*T
	putter
}](o *objectAPI, kind string, refusal any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var v T
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&v); err != nil || !P(&v).complete() {
			writeJSON(w, http.StatusBadRequest, refusal)
			return
		}
		P(&v).setID(r.PathValue("id"))
		o.set(kind, r.PathValue("id"), v)
		w.WriteHeader(http.StatusNoContent)
	}
}
