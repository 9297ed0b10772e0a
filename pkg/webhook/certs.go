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
	"regexp"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
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
	// DefaultCertMissTTL is how long a URL that named no usable
	// certificate (404, a chain that does not verify) is refused
	// without asking again.
	DefaultCertMissTTL = 10 * time.Minute
	// DefaultCertFetchBurst is how many certificates not cached may be
	// fetched at once.
	DefaultCertFetchBurst = 4
	// DefaultCertFetchInterval is how often one more may be fetched past
	// the burst.
	DefaultCertFetchInterval = 10 * time.Second
	// maxCertBytes bounds a certificate bundle.
	maxCertBytes = 64 << 10
	// maxCachedCerts bounds the cache of certificates that verified a
	// signature; past it, it starts over.
	maxCachedCerts = 32
	// maxUnverified bounds the cache of fetch results no signature has
	// vouched for yet; past it, it starts over, and the verified cache
	// is left as it is.
	maxUnverified = 64
	// maxCertRedirects bounds the hops of one fetch.
	maxCertRedirects = 3
)

// paypalCertURL is the only shape of certificate URL fetched: https,
// a host (pinned, checked apart), PayPal's certificate path, and no
// user, query or fragment. PayPal's are like
// /v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77.
var paypalCertURL = regexp.MustCompile(`^https://([^/?#@]+)(/v1/notifications/certs/CERT-[A-Za-z0-9-]{1,64})$`)

// PayPalCertHosts are the hosts PayPal serves its signing certificates
// from, live and sandbox.
var PayPalCertHosts = []string{"api.paypal.com", "api.sandbox.paypal.com", "api-m.paypal.com", "api-m.sandbox.paypal.com"}

// CertFetcherConfig configures a [CertFetcher].
type CertFetcherConfig struct {
	// Hosts are the pinned hosts (host or host:port) a certificate URL
	// may name. Required.
	Hosts []string
	// Client fetches; nil means a client with Timeout. A copy is used,
	// whose redirects are followed only to a certificate URL on a
	// pinned host (then the caller's CheckRedirect, if any, is asked);
	// the caller's client is left as it is.
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
	// MissTTL is how long a URL that named no usable certificate is
	// refused without a fetch; zero means [DefaultCertMissTTL].
	MissTTL time.Duration
	// FetchBurst and FetchInterval limit the fetches of certificates
	// not cached: FetchBurst at once, one more each FetchInterval;
	// zero means [DefaultCertFetchBurst] and [DefaultCertFetchInterval].
	FetchBurst    int
	FetchInterval time.Duration
}

// CertFetcher fetches signing certificates from pinned hosts only, with
// a bounded wait, checks their chain, and caches their keys. It is safe
// for concurrent use.
//
// Anyone can name a certificate URL, so a URL costs a fetch only when it
// has PayPal's certificate shape on a pinned host, is not cached (a miss
// is remembered for MissTTL), and the rate limit allows; concurrent
// deliveries naming one URL share its fetch. A fetched certificate is
// held apart, in a bounded cache of its own, until a delivery's
// signature verifies with it: only then does it enter the cache of
// certificates in use, so unverified URLs never evict one.
type CertFetcher struct {
	cfg     CertFetcherConfig
	client  *http.Client
	limit   *rate.Limiter
	flights singleflight.Group

	mu         sync.Mutex
	cache      map[string]cachedCert // verified a signature
	unverified map[string]cachedCert // fetched, or missed (err set)
}

type cachedCert struct {
	key     *rsa.PublicKey
	err     error
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
	if cfg.MissTTL == 0 {
		cfg.MissTTL = DefaultCertMissTTL
	}
	if cfg.FetchBurst == 0 {
		cfg.FetchBurst = DefaultCertFetchBurst
	}
	if cfg.FetchInterval == 0 {
		cfg.FetchInterval = DefaultCertFetchInterval
	}
	f := &CertFetcher{cfg: cfg, cache: map[string]cachedCert{}, unverified: map[string]cachedCert{},
		limit: rate.NewLimiter(rate.Every(cfg.FetchInterval), cfg.FetchBurst)}
	// A copy of the caller's client, so that its own redirect policy is
	// left as it was; ours checks every hop.
	client := http.Client{Timeout: cfg.Timeout}
	if cfg.Client != nil {
		client = *cfg.Client
	}
	client.CheckRedirect = f.checkRedirect(client.CheckRedirect)
	f.client = &client
	return f
}

// pinned reports whether rawURL is a certificate URL this fetcher may
// fetch: PayPal's shape, on a pinned host.
func (f *CertFetcher) pinned(rawURL string) bool {
	m := paypalCertURL.FindStringSubmatch(rawURL)
	return m != nil && slices.Contains(f.cfg.Hosts, m[1])
}

// checkRedirect refuses a hop that leaves https on the pinned hosts,
// then asks the caller's policy, if any.
func (f *CertFetcher) checkRedirect(caller func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > maxCertRedirects || !f.pinned(req.URL.String()) {
			return fmt.Errorf("certificate redirect off the pinned hosts: %w", ErrBadSignature)
		}
		if caller != nil {
			return caller(req, via)
		}
		return nil
	}
}

// Key returns the public key of the certificate at rawURL, from the
// cache or fetched. A URL that is not PayPal's certificate shape on a
// pinned host, a certificate the host does not have (404), or one whose
// chain does not verify, is [ErrBadSignature]; a fetch that fails, times
// out or is over the rate limit is [ErrCertUnavailable]. The key joins
// the certificates in use once a [Verifier] has verified a signature
// with it.
func (f *CertFetcher) Key(rawURL string, now time.Time) (*rsa.PublicKey, error) {
	if !f.pinned(rawURL) {
		return nil, fmt.Errorf("%s header: not a certificate URL on a pinned host: %w", HeaderPayPalCertURL, ErrBadSignature)
	}
	if c, ok := f.cached(rawURL, now); ok {
		return c.key, c.err
	}
	v, err, _ := f.flights.Do(rawURL, func() (any, error) {
		// A flight that ended just before this one began has filled the cache.
		if c, ok := f.cached(rawURL, now); ok {
			return c.key, c.err
		}
		if !f.limit.AllowN(now, 1) {
			return nil, fmt.Errorf("certificate fetches over the rate limit: %w", ErrCertUnavailable)
		}
		c := f.load(rawURL, now)
		if c.err == nil || errors.Is(c.err, ErrBadSignature) {
			f.mu.Lock()
			if len(f.unverified) >= maxUnverified {
				f.unverified = map[string]cachedCert{}
			}
			f.unverified[rawURL] = c
			f.mu.Unlock()
		}
		return c.key, c.err
	})
	key, _ := v.(*rsa.PublicKey)
	return key, err
}

// promote moves the certificate at rawURL, which key of a verified
// signature came from, into the cache deliveries are served from.
func (f *CertFetcher) promote(rawURL string, key *rsa.PublicKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.unverified[rawURL]
	if !ok || c.err != nil || !c.key.Equal(key) {
		return
	}
	delete(f.unverified, rawURL)
	if len(f.cache) >= maxCachedCerts {
		f.cache = map[string]cachedCert{}
	}
	f.cache[rawURL] = c
}

// cached returns the unexpired entry of rawURL, verified first.
func (f *CertFetcher) cached(rawURL string, now time.Time) (cachedCert, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range []map[string]cachedCert{f.cache, f.unverified} {
		if c, ok := m[rawURL]; ok && now.Before(c.expires) {
			return c, true
		}
	}
	return cachedCert{}, false
}

// load fetches and checks the certificate at rawURL; a miss (err set)
// expires after MissTTL.
func (f *CertFetcher) load(rawURL string, now time.Time) cachedCert {
	der, err := f.fetch(rawURL)
	if err != nil {
		return cachedCert{err: err, expires: now.Add(f.cfg.MissTTL)}
	}
	key, notAfter, err := f.check(der, now)
	if err != nil {
		return cachedCert{err: err, expires: now.Add(f.cfg.MissTTL)}
	}
	expires := now.Add(f.cfg.TTL)
	if notAfter.Before(expires) {
		expires = notAfter
	}
	return cachedCert{key: key, expires: expires}
}

// fetch gets the PEM bundle at rawURL within the timeout.
func (f *CertFetcher) fetch(rawURL string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", ErrBadSignature)
	}
	res, err := f.client.Do(req)
	if errors.Is(err, ErrBadSignature) {
		return nil, fmt.Errorf("fetch certificate: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch certificate: %w: %w", ErrCertUnavailable, err)
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusGone:
		// The pinned host has no such certificate: the URL is made up.
		return nil, fmt.Errorf("fetch certificate: status %d: %w", res.StatusCode, ErrBadSignature)
	default:
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
