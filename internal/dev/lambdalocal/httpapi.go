package lambdalocal

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// HTTPHandler is a Lambda handler behind an HTTP API with payload v2.
type HTTPHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// HTTPRoute maps an HTTP API route key ("POST /webhooks/{source}") to a
// handler.
type HTTPRoute struct {
	Method   string
	Path     string
	Function string
	Handler  HTTPHandler
	Timeout  time.Duration
}

// HTTPAPIConfig configures [NewHTTPAPI].
type HTTPAPIConfig struct {
	Routes []HTTPRoute
	Logger *slog.Logger
}

// maxPayload is API Gateway's request payload limit.
const maxPayload = 10 << 20

// HTTPAPI is an http.Handler that behaves like an API Gateway HTTP API
// with Lambda proxy integrations (payload format 2.0).
type HTTPAPI struct {
	routes []HTTPRoute
	log    *slog.Logger
}

// NewHTTPAPI builds the adapter.
func NewHTTPAPI(cfg HTTPAPIConfig) *HTTPAPI {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &HTTPAPI{routes: cfg.Routes, log: log}
}

func (a *HTTPAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, params, ok := a.match(r.Method, r.URL.Path)
	if !ok {
		writeGatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err != nil || len(body) > maxPayload {
		writeGatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	req := toRequest(r, route, params, body)
	timeout := route.Timeout
	if timeout <= 0 || timeout > 30*time.Second {
		timeout = 30 * time.Second // the HTTP API integration limit
	}
	ctx, cancel := InvokeContext(r.Context(), route.Function, timeout)
	defer cancel()
	var resp events.APIGatewayV2HTTPResponse
	var herr error
	if !runWithDeadline(ctx, func() { resp, herr = route.Handler(ctx, req) }) {
		writeGatewayError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	}
	if herr != nil {
		a.log.ErrorContext(ctx, "handler error", "route", route.Method+" "+route.Path, "err", herr)
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	writeResponse(w, resp)
}

func (a *HTTPAPI) match(method, path string) (HTTPRoute, map[string]string, bool) {
	for _, rt := range a.routes {
		if rt.Method != method && rt.Method != "ANY" {
			continue
		}
		if params, ok := matchPath(rt.Path, path); ok {
			return rt, params, true
		}
	}
	return HTTPRoute{}, nil, false
}

func matchPath(pattern, path string) (map[string]string, bool) {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	if len(ps) != len(xs) {
		return nil, false
	}
	params := map[string]string{}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if xs[i] == "" {
				return nil, false
			}
			params[strings.Trim(p, "{}")] = xs[i]
			continue
		}
		if p != xs[i] {
			return nil, false
		}
	}
	return params, true
}

func toRequest(r *http.Request, rt HTTPRoute, params map[string]string, body []byte) events.APIGatewayV2HTTPRequest {
	now := time.Now().UTC()
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	query := map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	sourceIP, _, _ := net.SplitHostPort(r.RemoteAddr)
	req := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              rt.Method + " " + rt.Path,
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID:    LocalAccountID,
			APIID:        localAPIID,
			DomainName:   r.Host,
			DomainPrefix: strings.Split(r.Host, ".")[0],
			RouteKey:     rt.Method + " " + rt.Path,
			Stage:        "$default",
			RequestID:    NewRequestID(),
			Time:         now.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: sourceIP, UserAgent: r.UserAgent(),
			},
		},
	}
	if isText(headers["content-type"]) {
		req.Body = string(body)
	} else if len(body) > 0 {
		req.Body = base64.StdEncoding.EncodeToString(body)
		req.IsBase64Encoded = true
	}
	return req
}

// isText mirrors API Gateway: bodies of text media types are passed as
// strings, everything else base64-encoded.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || mt == "application/x-www-form-urlencoded" || mt == "application/javascript"
}

func writeResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if dec, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = dec
		}
	}
	w.WriteHeader(status)
	w.Write(body)
}

func writeGatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, `{"message":"`+msg+`"}`)
}
