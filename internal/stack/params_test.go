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
