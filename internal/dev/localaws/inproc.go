package localaws

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// inProcess is an http.RoundTripper that serves each request with a
// handler in this process, with no socket, no HTTP framing and no
// connection pool: the SDK's own client stack (serialize, sign, retry,
// deserialize) runs unchanged, and only the bytes skip the loopback. The
// harness uses it where it owns both ends (its own DynamoDB client and its
// embedded DynamoDB); the loopback listener stays for everything else,
// such as the AWS CLI.
type inProcess struct {
	h http.Handler
}

func (t inProcess) RoundTrip(r *http.Request) (_ *http.Response, err error) {
	if r.Body != nil {
		defer r.Body.Close()
	}
	// A handler that aborts (http.ErrAbortHandler, as the fault layer's
	// dropped connection does) is a transport error, as over a socket.
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			err = errDropped
		}
	}()
	w := &recorder{header: http.Header{}}
	t.h.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.header.Set("Content-Length", strconv.Itoa(w.body.Len()))
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       r,
	}, nil
}

// recorder is the http.ResponseWriter of [inProcess].
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}
