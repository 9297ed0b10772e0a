//go:build !oncall

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// putObject writes object to the local double of a provider's API that
// the environment variable double names (HOOKLINE_<PROVIDER>_URL, from
// the endpoints file of 'hookline run'), at path+id.
func putObject(ctx context.Context, double, name, path, id string, object []byte) error {
	base := os.Getenv(double)
	if base == "" {
		return fmt.Errorf("no %s double: start 'hookline run' in this directory", name)
	}
	status, answer, err := httpDo(ctx, http.MethodPut, strings.TrimSuffix(base, "/")+path+url.PathEscape(id), object)
	if err != nil {
		return err
	}
	if status != http.StatusNoContent {
		return fmt.Errorf("the %s double refused the object: %d %s", name, status, answer)
	}
	return nil
}

// paypalObjects are where the PayPal double takes the object of each
// event type the worker fetches, and the status it has when the event's
// resource does not say.
var paypalObjects = map[string]struct{ path, status, member string }{
	"PAYMENT.CAPTURE.COMPLETED": {providersim.PayPalSimCapturePath, "COMPLETED", "status"},
	"PAYMENT.SALE.COMPLETED":    {providersim.PayPalSimSalePath, "completed", "state"},
}

// putPayPalObject writes the capture or sale a PayPal event names to the
// local PayPal API double: the --object file, else the event's resource,
// completed unless it says otherwise. Other events are not fetched, so
// nothing is written for them.
func (a sendArgs) putPayPalObject(ctx context.Context, event []byte) error {
	var ev struct {
		EventType string                     `json:"event_type"`
		Resource  map[string]json.RawMessage `json:"resource"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		return fmt.Errorf("--file: not a PayPal event: %w", err)
	}
	kind, fetched := paypalObjects[ev.EventType]
	if !fetched {
		return nil
	}
	object := ev.Resource
	if a.object != "" {
		data, err := os.ReadFile(a.object)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &object); err != nil {
			return fmt.Errorf("--object: not a JSON object: %w", err)
		}
	}
	var id string
	if err := json.Unmarshal(object["id"], &id); err != nil || id == "" {
		return errors.New("the PayPal object has no \"id\"")
	}
	if _, ok := object[kind.member]; !ok {
		object[kind.member], _ = json.Marshal(kind.status)
	}
	data, _ := json.Marshal(object) // a map of raw JSON always marshals
	return putObject(ctx, "HOOKLINE_PAYPAL_API_URL", "PayPal API", kind.path, id, data)
}

// putGoCardlessPayment writes the --object payment to the local
// GoCardless double, if one is given.
func (a sendArgs) putGoCardlessPayment(ctx context.Context) error {
	if a.object == "" {
		return nil
	}
	data, err := os.ReadFile(a.object)
	if err != nil {
		return err
	}
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &p); err != nil || p.ID == "" {
		return errors.New("--object: want a GoCardless payment as JSON, with its \"id\"")
	}
	return putObject(ctx, "HOOKLINE_GOCARDLESS_URL", "GoCardless", providersim.GoCardlessSimPaymentPath, p.ID, data)
}
