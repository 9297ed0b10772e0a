package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Source is one configured webhook provider: how its calls are verified and
// where accepted events go. Adding a provider is configuration only.
type Source struct {
	// Name identifies the source in routes, keys and metrics, such as
	// "payments" or "usage".
	Name string
	// Scheme is the signature scheme the provider uses.
	Scheme Scheme
	// Secrets are the active secrets, newest first. Never log them.
	Secrets []string
	// Tolerance is the replay window; zero means [DefaultTolerance].
	Tolerance time.Duration
	// QueueURL is the queue that accepted events are sent to.
	QueueURL string
	// MaxBody is the body limit in bytes; zero means [DefaultMaxBody].
	MaxBody int64
	// Options are what some presets need beyond a secret.
	Options PresetOptions
}

var sourceNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Validate reports every problem with the source at once. The report names
// secrets by position only.
func (s Source) Validate() error {
	var errs []error
	if !sourceNamePattern.MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("name %q: want 1 to 64 of a-z, 0-9, '_' and '-': %w", s.Name, ErrBadConfig))
	}
	cfg := VerifierConfig{Scheme: s.Scheme, Tolerance: s.Tolerance, MaxBody: s.MaxBody, Options: s.Options}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if s.QueueURL == "" {
		errs = append(errs, fmt.Errorf("queue url is empty: %w", ErrBadConfig))
	}
	switch {
	case !s.Scheme.Valid() || !s.Scheme.NeedsSecret():
	case presets[s.Scheme].decode != nil:
		if err := checkPresetSecrets(s.Scheme, s.Secrets); err != nil {
			errs = append(errs, err)
		}
	default:
		if _, err := secretKeys(s.Scheme, s.Secrets); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("source %q: %w", s.Name, err)
	}
	return nil
}

// Verifier returns a [Verifier] for the source. now may be nil for time.Now.
func (s Source) Verifier(now func() time.Time) (*Verifier, error) {
	return NewVerifier(VerifierConfig{Scheme: s.Scheme, Tolerance: s.Tolerance, MaxBody: s.MaxBody, Now: now, Options: s.Options})
}

// SourceSpec is a source as configured, without its secrets, which come from
// an environment variable (SecretEnv) or from Secrets Manager (SecretID).
// Either way the secret value is a comma-separated list; see [SplitSecrets].
//
// SignedURL, WebhookID and CertHosts are the preset options some
// schemes require ([PresetOptions]).
type SourceSpec struct {
	Name      string
	Scheme    Scheme
	SecretEnv string
	SecretID  string
	Queue     string
	MaxBody   int64
	Tolerance time.Duration
	SignedURL string
	WebhookID string
	CertHosts []string
}

// Options returns the spec's preset options.
func (sp SourceSpec) Options() PresetOptions {
	return PresetOptions{SignedURL: sp.SignedURL, WebhookID: sp.WebhookID, CertHosts: sp.CertHosts}
}

// sourceSpecJSON is the JSON form of a SourceSpec.
type sourceSpecJSON struct {
	Name      string   `json:"name"`
	Scheme    Scheme   `json:"scheme"`
	SecretEnv string   `json:"secret_env"`
	SecretID  string   `json:"secret_id"`
	Queue     string   `json:"queue"`
	MaxBody   int64    `json:"max_body"`
	Tolerance string   `json:"tolerance"`
	SignedURL string   `json:"signed_url"`
	WebhookID string   `json:"webhook_id"`
	CertHosts []string `json:"cert_hosts"`
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseSources parses a JSON array of sources, such as the value of
// HOOKLINE_SOURCES:
//
//	[{"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS",
//	  "queue":"payments","max_body":258048,"tolerance":"300s"}]
//
// Each source names exactly one of secret_env and secret_id (none for the
// paypal and mollie schemes, which take no secret); secrets never appear
// in this text, and unknown members are refused so that a misplaced
// secret is not silently carried along. max_body and tolerance may be left
// out for their defaults. A preset names what else it needs: square a
// signed_url, paypal a webhook_id and its cert_hosts; a preset missing one
// is refused with the field's name. Every problem is reported at once.
func ParseSources(jsonText string) ([]SourceSpec, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(jsonText)))
	dec.DisallowUnknownFields()
	var raw []sourceSpecJSON
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("sources: %s: %w", sourceJSONProblem(err), ErrBadConfig)
	}
	if dec.More() {
		return nil, fmt.Errorf("sources: text after the array: %w", ErrBadConfig)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("sources: none configured: %w", ErrBadConfig)
	}
	specs := make([]SourceSpec, 0, len(raw))
	seen := map[string]int{}
	var errs []error
	for i, r := range raw {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("sources[%d] %q: %s: %w", i, r.Name, fmt.Sprintf(format, args...), ErrBadConfig))
		}
		spec := SourceSpec{Name: r.Name, Scheme: r.Scheme, SecretEnv: r.SecretEnv, SecretID: r.SecretID, Queue: r.Queue, MaxBody: r.MaxBody,
			SignedURL: r.SignedURL, WebhookID: r.WebhookID, CertHosts: r.CertHosts}
		if !sourceNamePattern.MatchString(r.Name) {
			bad("name: want 1 to 64 of a-z, 0-9, '_' and '-'")
		} else if j, dup := seen[r.Name]; dup {
			bad("name also used by sources[%d]", j)
		} else {
			seen[r.Name] = i
		}
		if !r.Scheme.Valid() {
			bad("scheme %q unknown, want one of %s", r.Scheme, schemeList())
		}
		for _, f := range missingFields(r.Scheme, spec.Options(), true) {
			bad("scheme %q needs %s", r.Scheme, f)
		}
		for _, p := range checkOptions(spec.Options()) {
			bad("%s", p)
		}
		needsSecret := !r.Scheme.Valid() || r.Scheme.NeedsSecret()
		switch {
		case !needsSecret && (r.SecretEnv != "" || r.SecretID != ""):
			bad("scheme %q takes no secret: drop secret_env and secret_id", r.Scheme)
		case !needsSecret:
		case r.SecretEnv == "" && r.SecretID == "":
			bad("want secret_env or secret_id")
		case r.SecretEnv != "" && r.SecretID != "":
			bad("want only one of secret_env and secret_id")
		case r.SecretEnv != "" && !envNamePattern.MatchString(r.SecretEnv):
			bad("secret_env %q is not an environment variable name", r.SecretEnv)
		}
		if r.Queue == "" {
			bad("queue is empty")
		}
		if r.MaxBody < 0 || r.MaxBody > MaxBodyLimit {
			bad("max_body %d outside 0..%d", r.MaxBody, MaxBodyLimit)
		}
		if r.Tolerance != "" {
			d, err := time.ParseDuration(r.Tolerance)
			if err != nil || d <= 0 {
				bad("tolerance %q: want a positive duration such as \"300s\"", r.Tolerance)
			}
			spec.Tolerance = d
		}
		specs = append(specs, spec)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return specs, nil
}

// sourceJSONProblem describes a decoding error without quoting the input,
// which might hold a misplaced secret.
func sourceJSONProblem(err error) string {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at offset %d", syntax.Offset)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return fmt.Sprintf("want a JSON array of objects, got JSON type %s", typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Sprintf("member %q has JSON type %s", typeErr.Field, typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// The message quotes the member name only, never its value.
		return strings.TrimPrefix(err.Error(), "json: ")
	default:
		return "invalid JSON"
	}
}

// Source joins the spec with its secrets and its resolved queue URL, and
// validates the result.
func (sp SourceSpec) Source(secrets []string, queueURL string) (Source, error) {
	s := Source{
		Name:      sp.Name,
		Scheme:    sp.Scheme,
		Secrets:   secrets,
		Tolerance: sp.Tolerance,
		QueueURL:  queueURL,
		MaxBody:   sp.MaxBody,
		Options:   sp.Options(),
	}
	if err := s.Validate(); err != nil {
		return Source{}, err
	}
	return s, nil
}

// SplitSecrets splits a comma-separated list of secrets, newest first, as
// held in an environment variable or a Secrets Manager secret. Blank entries
// and surrounding spaces are dropped.
func SplitSecrets(value string) []string {
	var out []string
	for _, s := range strings.Split(value, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
