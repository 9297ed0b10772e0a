package lab

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// Units are the DynamoDB capacity units one event consumed on average,
// as the local DynamoDB's capacity model metered them: a write unit per
// KB written (an update is billed on the item's whole size), a read unit
// per 4 KB read strongly consistently, a transaction's items twice, and
// every index write that a table write causes.
type Units struct {
	Write float64 `json:"write_units"`
	Read  float64 `json:"read_units"`
	// ByTable splits them by table, and by index as "table/index".
	ByTable map[string]TableUnits `json:"by_table,omitempty"`
	// Metered is false when the capacity model was off
	// (HOOKLINE_LOCAL_AWS_MODEL=off, or an external endpoint): the units
	// are then one a write call and one a read call, a lower bound.
	Metered bool `json:"metered"`
}

// TableUnits are one table's or index's units per event.
type TableUnits struct {
	Write float64 `json:"write_units"`
	Read  float64 `json:"read_units"`
}

// String is "9.00 write, 0.50 read (hookline-intake 8.00 write, ...)".
func (u Units) String() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(u.ByTable)) {
		t := u.ByTable[name]
		parts = append(parts, fmt.Sprintf("%s %.2f write %.2f read", name, t.Write, t.Read))
	}
	s := fmt.Sprintf("%.2f write, %.2f read", u.Write, u.Read)
	if !u.Metered {
		return s + " (capacity model off: one unit a call, a lower bound)"
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}

// unitsBetween is what the tables and indexes consumed between two
// snapshots, per event; calls (by operation) stand in when nothing was
// metered.
func unitsBetween(before, after localaws.Capacity, calls map[string]int64, events float64) Units {
	u := Units{ByTable: map[string]TableUnits{}}
	add := func(name string, a, b localaws.Units) {
		d := TableUnits{Write: (a.WriteUnits - b.WriteUnits) / events, Read: (a.ReadUnits - b.ReadUnits) / events}
		if d.Write <= 0 && d.Read <= 0 {
			return
		}
		u.ByTable[name] = d
		u.Write += d.Write
		u.Read += d.Read
	}
	for name, t := range after.Tables {
		was := before.Tables[name]
		add(name, t.Units, was.Units)
		for idx, iu := range t.Indexes {
			add(name+"/"+idx, iu, was.Indexes[idx])
		}
	}
	if len(after.Tables) > 0 {
		u.Metered = true
		return u
	}
	u.Read, u.Write = callUnits(calls, events)
	u.ByTable = nil
	return u
}

// callUnits counts a unit a DynamoDB call (two a transaction), read or
// write by its operation: what a run without the capacity model can say.
func callUnits(calls map[string]int64, events float64) (reads, writes float64) {
	for op, n := range calls {
		name, ok := strings.CutPrefix(op, "DynamoDB.")
		if !ok {
			continue
		}
		switch name {
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem":
			writes += float64(n)
		case "TransactWriteItems":
			writes += 2 * float64(n)
		default:
			reads += float64(n)
		}
	}
	return reads / events, writes / events
}

// CallUnits is what one DynamoDB call of one event consumed.
type CallUnits struct {
	// Function is the function that made the call: "intake" (the
	// receiver) or "worker".
	Function string `json:"function"`
	// Call is the SDK call ("dynamodb.PutItem").
	Call  string `json:"call"`
	Units Units  `json:"units"`
}

func (c CallUnits) String() string { return c.Function + " " + c.Call + " " + c.Units.String() }

// unitsByCall replays the DynamoDB calls of sc once, for an event of its
// own and one call at a time, and returns what each consumed. Run when
// nothing else writes (between the paced run and the ceilings), each
// call's units are its own.
func unitsByCall(ctx context.Context, env *localaws.Env, sc Script) ([]CallUnits, error) {
	b := &bare{env: env}
	r := strings.NewReplacer(sc.id, eventID(newRun(), 0))
	var out []CallUnits
	for _, side := range []struct {
		function string
		calls    []any
	}{{"intake", sc.intake}, {"worker", sc.worker}} {
		for _, in := range side.calls {
			if _, ok := in.(*sqs.SendMessageInput); ok {
				continue // SQS has no capacity units
			}
			before := env.Capacity()
			if err := b.call(ctx, rewrite(in, r)); err != nil {
				return out, err
			}
			out = append(out, CallUnits{Function: side.function, Call: callNames([]any{in}),
				Units: unitsBetween(before, env.Capacity(), map[string]int64{"DynamoDB." + callOp(in): 1}, 1)})
		}
	}
	return out, nil
}

// callOp is the operation of an SDK input ("PutItem").
func callOp(in any) string {
	name := callNames([]any{in})
	return name[strings.LastIndexByte(name, '.')+1:]
}
