package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/paymentworker"
)

// workerFunction is the payment worker's function in the local system.
const workerFunction = "PaymentWorkerFunction"

// Script is the AWS calls one probe event made on the full path, in
// order, split by the function that made them: what the bare pipeline
// replays, with the probe's event ID swapped for its own.
type Script struct {
	id     string // the probe's event ID
	intake []any  // SDK inputs the receiver sent (*dynamodb.PutItemInput, *sqs.SendMessageInput, ...)
	worker []any  // SDK inputs the payment worker sent
}

// String names the calls of the script, at intake and in the worker.
func (s Script) String() string {
	return fmt.Sprintf("intake %s; worker %s", callNames(s.intake), callNames(s.worker))
}

func callNames(calls []any) string {
	if len(calls) == 0 {
		return "none"
	}
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", c), "*"), "Input")
	}
	return strings.Join(names, ", ")
}

// eventID returns an event ID of fixed width, so that a replay's requests
// are as long as the probe's.
func eventID(run string, i int) string { return fmt.Sprintf("evt_%s_%08d", run, i) }

// newRun returns a run tag for eventID.
func newRun() string { return fmt.Sprintf("%06x", rand.Uint32()&0xffffff) }

// RecordScript sends one probe webhook through the full path with
// send, waits until settled says the worker's invocation for it has
// returned (not merely charged: the worker completes its claim after), and
// returns
// the AWS calls the functions made for it: those that name the probe's
// event ID (every key and message of an event does). Calls made outside a
// function (the event source's receives and deletes) are not part of it.
func RecordScript(ctx context.Context, env *localaws.Env, send func(ctx context.Context, id string) error, settled func(id string) bool) (Script, error) {
	sc := Script{id: eventID(newRun(), 0)}
	var mu sync.Mutex
	stop := env.Calls.Tap(func(c localaws.Call) {
		lc, ok := lambdacontext.FromContext(c.Context)
		if !ok || !mentions(reflect.ValueOf(c.Input), sc.id) {
			// The event source's receives and deletes; other events'
			// calls, such as retries of the paced run's stragglers.
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(lc.InvokedFunctionArn, ":function:"+workerFunction) {
			sc.worker = append(sc.worker, c.Input)
		} else {
			sc.intake = append(sc.intake, c.Input)
		}
	})
	defer stop()
	if err := sendProbe(ctx, send, sc.id); err != nil {
		return sc, fmt.Errorf("lab: the probe webhook: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !settled(sc.id) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if !settled(sc.id) || len(sc.intake) == 0 {
		return sc, fmt.Errorf("%w within 30 s, so the bare pipeline has nothing to replay", ErrProbeUnsettled)
	}
	return sc, nil
}

// ErrProbeUnsettled reports a probe webhook that was accepted and then
// neither charged, declined nor dead-lettered: the bare pipeline has no
// calls to replay.
var ErrProbeUnsettled = errors.New("lab: the probe webhook did not settle")

// recordScript records the script of this experiment's full path.
func (e *experiment) recordScript(ctx context.Context) (Script, error) {
	send := func(ctx context.Context, id string) error {
		e.obs.offer(id, time.Now())
		why := e.post(ctx, id, 0)
		e.obs.accept(id, why)
		if why != "" {
			return errors.New(why)
		}
		return nil
	}
	settled := func(id string) bool { return e.obs.settled(id) && e.invoking.Load() == 0 }
	sc, err := RecordScript(ctx, e.sys.AWS, send, settled)
	if errors.Is(err, ErrProbeUnsettled) {
		err = fmt.Errorf("%w: it %s, so the bare pipeline has nothing to replay", ErrProbeUnsettled, e.probeFate(sc.id))
	}
	return sc, err
}

// probeFate says what became of a probe webhook that did not settle: the
// dead letter's reason, or, for one the worker acknowledged with no
// charge, why its rule does not act on it.
func (e *experiment) probeFate(id string) string {
	if reason, dead := e.obs.deadReason(id); dead {
		return "was dead-lettered: " + reason
	}
	if e.obs.settled(id) {
		return "was settled, and the worker's invocation did not return within 30 s"
	}
	ms, err := e.cfg.Payload.mappings()
	if err != nil {
		return "was accepted but not charged: " + err.Error()
	}
	switch p, err := e.cfg.Payload.decide(ms, id, 0); {
	case err != nil:
		return "was accepted but not charged: " + paymentworker.MalformedReason(err)
	case p.NotAnEffect != "":
		return "was accepted but not charged: not an effect (" + p.NotAnEffect + ")"
	}
	return "was accepted, and not charged, declined or dead-lettered within 30 s"
}

// mentions reports whether s occurs in any exported string or byte slice
// reachable from v.
func mentions(v reflect.Value, s string) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && mentions(v.Elem(), s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && mentions(v.Field(i), s) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if mentions(it.Key(), s) || mentions(it.Value(), s) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 && v.Kind() == reflect.Slice {
			return strings.Contains(string(v.Bytes()), s)
		}
		for i := range v.Len() {
			if mentions(v.Index(i), s) {
				return true
			}
		}
	case reflect.String:
		return strings.Contains(v.String(), s)
	}
	return false
}

// rewrite returns a deep copy of v with every string passed through r:
// the probe's calls with another event's ID and queue.
func rewrite[T any](v T, r *strings.Replacer) T {
	out := reflect.New(reflect.TypeOf(&v).Elem()).Elem()
	copyRewritten(out, reflect.ValueOf(&v).Elem(), r)
	return out.Interface().(T)
}

func copyRewritten(dst, src reflect.Value, r *strings.Replacer) {
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			dst.Set(reflect.New(src.Type().Elem()))
			copyRewritten(dst.Elem(), src.Elem(), r)
		}
	case reflect.Interface:
		if !src.IsNil() {
			v := reflect.New(src.Elem().Type()).Elem()
			copyRewritten(v, src.Elem(), r)
			dst.Set(v)
		}
	case reflect.Struct:
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				copyRewritten(dst.Field(i), src.Field(i), r)
			}
		}
	case reflect.Map:
		if !src.IsNil() {
			dst.Set(reflect.MakeMapWithSize(src.Type(), src.Len()))
			for it := src.MapRange(); it.Next(); {
				k, v := reflect.New(src.Type().Key()).Elem(), reflect.New(src.Type().Elem()).Elem()
				copyRewritten(k, it.Key(), r)
				copyRewritten(v, it.Value(), r)
				dst.SetMapIndex(k, v)
			}
		}
	case reflect.Slice:
		if src.Type().Elem().Kind() == reflect.Uint8 && !src.IsNil() {
			dst.SetBytes([]byte(r.Replace(string(src.Bytes()))))
			return
		}
		if !src.IsNil() {
			dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
			for i := range src.Len() {
				copyRewritten(dst.Index(i), src.Index(i), r)
			}
		}
	case reflect.String:
		dst.SetString(r.Replace(src.String()))
	default:
		dst.Set(src)
	}
}

// sendProbe sends the probe webhook as a provider does: again after a
// refusal (a 503 while local AWS faults make an intake write fail), up to
// probeAttempts times, 200 ms apart.
func sendProbe(ctx context.Context, send func(ctx context.Context, id string) error, id string) error {
	var err error
	for range probeAttempts {
		if err = send(ctx, id); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

const probeAttempts = 5
