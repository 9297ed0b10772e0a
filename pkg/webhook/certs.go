package webhook

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// ErrCertUnavailable means a signing certificate could not be fetched in
// time. It is our failure, not the sender's: answer 503, so that the
// provider retries.
var ErrCertUnavailable = errors.New("webhook: signing certificate unavailable")

// Defaults of a [CertFetcher].
const (
	// DefaultCertTimeout bounds one certificate fetch, so that an
	// acknowledgement never waits longer.
	DefaultCertTimeout = 3 * time.Second
	// DefaultCertTTL is how long a fetched certificate is trusted before
	// it is fetched again (never past its NotAfter).
	DefaultCertTTL = 24 * time.Hour
	// PayPalCertName is the name PayPal's signing certificates are
	// issued to.
	PayPalCertName = "messageverificationcerts.paypal.com"
	// maxCertBytes bounds a certificate bundle.
	maxCertBytes = 64 << 10
	// maxCachedCerts bounds the cache; past it, it starts over.
	maxCachedCerts = 32
)

// PayPalCertHosts are the hosts PayPal serves its signing certificates
// from, live and sandbox.
var PayPalCertHosts = []string{"api.paypal.com", "api.sandbox.paypal.com", "api-m.paypal.com", "api-m.sandbox.paypal.com"}

// CertFetcherConfig configures a [CertFetcher].
type CertFetcherConfig struct {
	// Hosts are the pinned hosts (host or host:port) a certificate URL
	// may name. Required.
	Hosts []string
	// Client fetches; nil means a client with Timeout.
	Client *http.Client
	// Roots verify the chain; nil means the system roots.
	Roots *x509.CertPool
	// Name is the name the leaf must be issued to; empty means
	// [PayPalCertName].
	Name string
	// Timeout bounds one fetch; zero means [DefaultCertTimeout].
	Timeout time.Duration
	// TTL bounds how long a certificate is cached; zero means
	// [DefaultCertTTL].
	TTL time.Duration
}

// CertFetcher fetches signing certificates from pinned hosts only, with
// a bounded wait, checks their chain, and caches their keys. It is safe
// for concurrent use.
type CertFetcher struct {
	cfg   CertFetcherConfig
	mu    sync.Mutex
	cache map[string]cachedCert
}

type cachedCert struct {
	key     *rsa.PublicKey
	expires time.Time
}

// NewCertFetcher returns a CertFetcher for cfg.
func NewCertFetcher(cfg CertFetcherConfig) *CertFetcher {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultCertTimeout
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultCertTTL
	}
	if cfg.Name == "" {
		cfg.Name = PayPalCertName
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	return &CertFetcher{cfg: cfg, cache: map[string]cachedCert{}}
}

// Key returns the public key of the certificate at rawURL, from the
// cache or fetched. A URL off the pinned hosts, or a certificate whose
// chain does not verify, is [ErrBadSignature]; a fetch that fails or
// times out is [ErrCertUnavailable].
func (f *CertFetcher) Key(rawURL string, now time.Time) (*rsa.PublicKey, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.User != nil || !slices.Contains(f.cfg.Hosts, u.Host) {
		return nil, fmt.Errorf("%s header: not an https URL on a pinned host: %w", HeaderPayPalCertURL, ErrBadSignature)
	}
	f.mu.Lock()
	c, ok := f.cache[rawURL]
	f.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.key, nil
	}
	der, err := f.fetch(rawURL)
	if err != nil {
		return nil, err
	}
	key, notAfter, err := f.check(der, now)
	if err != nil {
		return nil, err
	}
	expires := now.Add(f.cfg.TTL)
	if notAfter.Before(expires) {
		expires = notAfter
	}
	f.mu.Lock()
	if len(f.cache) >= maxCachedCerts {
		f.cache = map[string]cachedCert{}
	}
	f.cache[rawURL] = cachedCert{key: key, expires: expires}
	f.mu.Unlock()
	return key, nil
}

// fetch gets the PEM bundle at rawURL within the timeout.
func (f *CertFetcher) fetch(rawURL string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", ErrBadSignature)
	}
	res, err := f.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch certificate: %w: %w", ErrCertUnavailable, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch certificate: status %d: %w", res.StatusCode, ErrCertUnavailable)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxCertBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w: %w", ErrCertUnavailable, err)
	}
	if len(data) > maxCertBytes {
		return nil, fmt.Errorf("certificate bundle over %d bytes: %w", maxCertBytes, ErrBadSignature)
	}
	return data, nil
}

// check parses a PEM bundle (the leaf first) and verifies its chain.
func (f *CertFetcher) check(bundle []byte, now time.Time) (*rsa.PublicKey, time.Time, error) {
	var certs []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("parse certificate: %w", ErrBadSignature)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, time.Time{}, fmt.Errorf("no certificate in the bundle: %w", ErrBadSignature)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	leaf := certs[0]
	_, err := leaf.Verify(x509.VerifyOptions{Roots: f.cfg.Roots, Intermediates: inter, DNSName: f.cfg.Name,
		CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("certificate chain: %w", ErrBadSignature)
	}
	key, ok := leaf.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, time.Time{}, fmt.Errorf("certificate key is not RSA: %w", ErrBadSignature)
	}
	return key, leaf.NotAfter, nil
}
