package intake_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// A build may change the form of a message while the event's identity
// stays (Braintree's XML is escaped otherwise since the item is sized to
// its body). A redelivery after the deploy names the form the build
// before made of the same bytes (Event.LegacyPayload under its own ID):
// a record of that form is this event, a duplicate resumed as any other,
// and never a conflict, which would leave a record the build before did
// not send unsent for good.
func TestARecordOfTheSameEventInAnEarlierFormIsADuplicate(t *testing.T) {
	t.Parallel()
	// Given a record an earlier build made of an event and did not send
	c := newClocked(t, localaws.Faults{})
	earlier := drillEvent(c.env, "evt_earlier_form")
	earlier.Payload = []byte(`{"provider":"braintree","item":"\u003cnotification\u003e"}`)
	c.putItem(t, olderBuildRecord(earlier, intake.StatusReceived))
	// when the provider delivers it again, in this build's form,
	ev := earlier
	ev.Payload = []byte(`{"provider":"braintree","item":"<notification>"}`)
	ev.LegacyEventID, ev.LegacyPayload = ev.EventID, earlier.Payload
	res, err := c.store.Accept(context.Background(), ev)
	// then it is a duplicate, and the record's message is sent
	if err != nil || res.Outcome != intake.Duplicate {
		t.Fatalf("Accept = %+v, %v; want duplicate", res, err)
	}
	if msgs := messagesOf(t, c.env, ev.EventID); len(msgs) != 1 || aws.ToString(msgs[0].Body) != string(earlier.Payload) {
		t.Fatalf("queue holds %d messages of the event, want the record's once", len(msgs))
	}
	// and an earlier form that is not the record's is still a conflict
	ev.EventID, ev.LegacyEventID = "evt_other_form", "evt_other_form"
	c.putItem(t, olderBuildRecord(ev, intake.StatusReceived))
	ev.Payload, ev.LegacyPayload = []byte(`{"provider":"braintree","item":"<other>"}`), []byte(`{"provider":"braintree","item":"\u003cother\u003e"}`)
	if _, err := c.store.Accept(context.Background(), ev); !errors.Is(err, intake.ErrConflict) {
		t.Fatalf("Accept of another payload = %v; want ErrConflict", err)
	}
}
