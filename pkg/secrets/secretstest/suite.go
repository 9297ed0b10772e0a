package secretstest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/hookline/hookline/pkg/secrets"
)

// Factory builds a provider whose store holds stored: each ref's raw
// value, a comma-separated list of secrets, newest first. A ref absent from
// stored does not exist in the store.
type Factory func(t *testing.T, stored map[string]string) secrets.Provider

// Run runs every case against the providers newProvider builds.
func Run(t *testing.T, newProvider Factory) {
	t.Run("one secret", func(t *testing.T) {
		p := newProvider(t, map[string]string{"PAY": "whsec_one"})
		expect(t, p, "PAY", []string{"whsec_one"})
	})
	t.Run("a rotation lists both, newest first, trimmed", func(t *testing.T) {
		p := newProvider(t, map[string]string{"PAY": " whsec_new , whsec_old "})
		expect(t, p, "PAY", []string{"whsec_new", "whsec_old"})
	})
	t.Run("refs are kept apart", func(t *testing.T) {
		p := newProvider(t, map[string]string{"PAY": "whsec_pay", "USAGE": "whsec_usage"})
		expect(t, p, "USAGE", []string{"whsec_usage"})
		expect(t, p, "PAY", []string{"whsec_pay"})
	})
	t.Run("an empty value is no active secret", func(t *testing.T) {
		p := newProvider(t, map[string]string{"PAY": " , "})
		_, err := p.Secrets(context.Background(), "PAY")
		if !errors.Is(err, secrets.ErrNoSecrets) {
			t.Fatalf("err = %v, want ErrNoSecrets", err)
		}
	})
	t.Run("an unknown ref is an error, never an empty list", func(t *testing.T) {
		p := newProvider(t, map[string]string{"PAY": "whsec_pay"})
		got, err := p.Secrets(context.Background(), "NOPE")
		if len(got) != 0 || !(errors.Is(err, secrets.ErrNoSecrets) || errors.Is(err, secrets.ErrUnavailable)) {
			t.Fatalf("got %v, err %v; want no secrets and ErrNoSecrets or ErrUnavailable", got, err)
		}
	})
	t.Run("concurrent reads agree", func(t *testing.T) {
		p := newProvider(t, map[string]string{"PAY": "whsec_new,whsec_old"})
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() {
				got, err := p.Secrets(context.Background(), "PAY")
				if err != nil || !slices.Equal(got, []string{"whsec_new", "whsec_old"}) {
					errs <- errors.Join(err, errors.New("wrong secrets"))
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

func expect(t *testing.T, p secrets.Provider, ref string, want []string) {
	t.Helper()
	got, err := p.Secrets(context.Background(), ref)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Secrets(%s) = %v, %v; want %v", ref, got, err, want)
	}
}
