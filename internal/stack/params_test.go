package stack

import "testing"

func TestParameterDefault(t *testing.T) {
	path, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ref, want string
		ok              bool
	}{
		{name: "a default", ref: "ref:PaymentProvider", want: "generic", ok: true},
		{name: "an empty default is a default", ref: "ref:PaymentMappings", want: "", ok: true},
		{name: "the bare name", ref: "ReconOwner", want: "spend-oncall", ok: true},
		{name: "no default", ref: "ref:ProviderApiKey", ok: false},
		{name: "a resource, not a parameter", ref: "ref:PaymentsQueue", ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tpl.ParameterDefault(tc.ref)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ParameterDefault(%q) = %q, %v; want %q, %v", tc.ref, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestUsageMappingsReachEveryFunctionThatReadsThem: USAGE_MAPPINGS is a
// parameter that the receiver maps bodies by and that the spend worker
// and the reconciler check SUM_SOURCES against at start; a function left
// without it maps by defaults, or skips that check, on AWS alone.
func TestUsageMappingsReachEveryFunctionThatReadsThem(t *testing.T) {
	path, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tpl.ParameterDefault("UsageMappings"); !ok {
		t.Fatal("no UsageMappings parameter with a default")
	}
	for _, id := range []string{"ReceiverFunction", "SpendWorkerFunction", "ReconcilerFunction"} {
		f, ok := tpl.Function(id)
		if !ok {
			t.Fatalf("no function %s", id)
		}
		if got := f.Environment["USAGE_MAPPINGS"]; got != "ref:UsageMappings" {
			t.Errorf("%s: USAGE_MAPPINGS = %q, want the UsageMappings parameter", id, got)
		}
	}
}
