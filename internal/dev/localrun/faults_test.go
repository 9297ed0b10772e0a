package localrun_test

import (
	"testing"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/localrun"
)

// TestFaultsReachLocalAWS: the local system passes its fault settings to
// local AWS, and reads HOOKLINE_LOCAL_AWS_FAULTS only when asked to.
func TestFaultsReachLocalAWS(t *testing.T) {
	if localaws.External() {
		t.Skip("the fault layer needs the embedded emulators")
	}
	t.Setenv(localaws.FaultsEnv, "seed=3,sqs-duplicate=0.5")
	tests := []struct {
		name string
		cfg  localrun.Config
		want string // the counts' names, "" when off
	}{
		{name: "env ignored unless asked", cfg: localrun.Config{NoWorkers: true}, want: ""},
		{name: "env when asked", cfg: localrun.Config{NoWorkers: true, AWSFaultsFromEnv: true}, want: "sqs-duplicate=0"},
		{name: "given faults win", cfg: localrun.Config{NoWorkers: true, AWSFaultsFromEnv: true,
			AWSFaults: localaws.Faults{Seed: 1, Rates: map[string]float64{localaws.FaultDDBError: 0.1}}}, want: "ddb-error=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := start(t, tt.cfg)
			if got := sys.AWS.Faults().String(); got != tt.want {
				t.Errorf("faults = %q, want %q", got, tt.want)
			}
		})
	}
}
