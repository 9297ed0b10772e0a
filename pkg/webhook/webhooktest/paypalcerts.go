package webhooktest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// PayPalCertName is the name PayPal's message-verification certificates
// are issued to; the double issues its leaf to the same name.
const PayPalCertName = "messageverificationcerts.paypal.com"

// PayPalCertPath is where the double serves its signing certificate.
const PayPalCertPath = "/v1/notifications/certs/CERT-hookline-local"

// PayPalCerts stands in for PayPal's certificate host: an HTTPS server on
// a loopback port that serves a signing certificate chained to a root of
// its own, and the private key to sign webhooks with. Point a webhook
// verifier's pinned hosts at [PayPalCerts.Host], its roots at
// [PayPalCerts.Roots] and its HTTP client at [PayPalCerts.Client].
type PayPalCerts struct {
	// Key signs webhooks as PayPal would.
	Key *rsa.PrivateKey
	// Roots holds the double's root certificate.
	Roots *x509.CertPool

	bundle   []byte
	tlsRoot  *x509.CertPool
	srv      *http.Server
	ln       net.Listener
	fetches  atomic.Int64
	requests atomic.Int64
	down     atomic.Bool
	delay    atomic.Int64
	redirect atomic.Pointer[string]
}

// StartPayPalCerts starts the double on a free loopback port.
func StartPayPalCerts() (*PayPalCerts, error) { return StartPayPalCertsOn("127.0.0.1:0") }

// StartPayPalCertsOn starts the double listening on addr, a loopback
// host:port, so that a source's cert_hosts can name it before it runs.
func StartPayPalCertsOn(addr string) (*PayPalCerts, error) {
	root, rootKey, err := selfSigned("hookline local PayPal root")
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: PayPalCertName}, DNSNames: []string{PayPalCertName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}, root, &key.PublicKey, rootKey)
	if err != nil {
		return nil, err
	}
	p := &PayPalCerts{Key: key, Roots: x509.NewCertPool()}
	p.Roots.AddCert(root)
	p.bundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	serving, err := p.servingCert()
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{serving}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	p.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PayPalCertPath, p.serve)
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		mux.ServeHTTP(w, r)
	})
	p.srv = &http.Server{Handler: counted, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// servingCert makes the TLS certificate of the double's own HTTPS
// server, for 127.0.0.1, trusted by [PayPalCerts.Client].
func (p *PayPalCerts) servingCert() (tls.Certificate, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "127.0.0.1"}}, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	p.tlsRoot = x509.NewCertPool()
	p.tlsRoot.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// selfSigned makes a CA certificate and its key.
func selfSigned(name string) (*x509.Certificate, *rsa.PrivateKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return c, key, err
}

func (p *PayPalCerts) serve(w http.ResponseWriter, r *http.Request) {
	if to := p.redirect.Swap(nil); to != nil {
		http.Redirect(w, r, *to, http.StatusFound)
		return
	}
	p.fetches.Add(1)
	if d := time.Duration(p.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			// Never an empty 200: drop the connection, as a host that
			// did not answer in time would.
			panic(http.ErrAbortHandler)
		}
	}
	if p.down.Load() {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(p.bundle)
}

// Host is the double's host:port, the one pinned host to configure.
func (p *PayPalCerts) Host() string { return p.ln.Addr().String() }

// CertURL is the URL of the signing certificate, as PayPal sends it in
// PAYPAL-CERT-URL.
func (p *PayPalCerts) CertURL() string { return "https://" + p.Host() + PayPalCertPath }

// Client is an HTTP client that trusts the double's HTTPS server, with
// the given timeout.
func (p *PayPalCerts) Client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.tlsRoot, MinVersion: tls.VersionTLS12}}}
}

// Fetches counts the certificate requests served.
func (p *PayPalCerts) Fetches() int { return int(p.fetches.Load()) }

// Requests counts every request the double received, on any path,
// redirected or answered.
func (p *PayPalCerts) Requests() int { return int(p.requests.Load()) }

// RedirectNext makes the next certificate request answer 302 to
// location, once; the requests after it are served as before.
func (p *PayPalCerts) RedirectNext(location string) { p.redirect.Store(&location) }

// SetDown makes the certificate host answer 503 while on.
func (p *PayPalCerts) SetDown(on bool) { p.down.Store(on) }

// SetDelay holds every certificate answer for d.
func (p *PayPalCerts) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops the double.
func (p *PayPalCerts) Close() error {
	if err := p.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("providersim: paypal certs: %w", err)
	}
	return nil
}

// KeyPEM is the double's signing key in PEM (PKCS #8), for a sender in
// another process ("hookline dev send-webhook --scheme paypal"). It is a
// development key, made at start, and signs nothing but local webhooks.
func (p *PayPalCerts) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(p.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
