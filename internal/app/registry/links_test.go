package registry_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the import path the packages below are named under.
const module = "github.com/hookline/hookline/"

// stripeSDK is Stripe's Go SDK: the payment worker charges through it.
// The reconciler and the spend worker read Stripe's meters and alerts
// with internal/stripeusage, which decodes into its own small types.
const stripeSDK = "github.com/stripe/stripe-go/v84"

// sqsSDK is the SQS client: the functions that send or receive on queues
// link it, with the intake. An AWS service package builds its schemas at
// start once linked, used or not, so the admission function and the
// reconciler must not import it through the shared wiring or config.
const sqsSDK = "github.com/aws/aws-sdk-go-v2/service/sqs"

// uses names, for each function, the packages it links among those that
// only some functions use: its own wiring, its own handler's packages and
// the provider adapters and SDKs they call. A package listed here belongs
// to the functions that list it, and any other function that links it
// carries another's dependencies. Packages every function links (config,
// the shared wiring in internal/app, the AWS SDK's DynamoDB client) are
// not listed.
var uses = map[string][]string{
	"receiver":  {"internal/app/receiverfn", "internal/receiver", "internal/intake", "pkg/queue", sqsSDK},
	"admission": {"internal/app/admissionfn", "internal/admission", "internal/spend", "internal/pager"},
	"payment-worker": {"internal/app/paymentfn", "internal/app/worker", "internal/paymentworker", "internal/stripecharge",
		stripeSDK, "github.com/bojanz/currency", "pkg/idempotency", "internal/intake", "pkg/queue", sqsSDK},
	// The spend worker parses Stripe's and OpenMeter's alerts with their
	// adapters' parsers, and OpenMeter's adapter is also the reconciler's
	// export.
	"spend-worker": {"internal/app/spendfn", "internal/app/worker", "internal/app/spendledger", "internal/spendworker",
		"internal/spend", "internal/pager", "internal/stripeusage", "internal/openmeter", "internal/reconcile",
		"internal/intake", "pkg/queue", sqsSDK},
	"reconciler": {"internal/app/reconcilerfn", "internal/app/spendledger", "internal/reconcile", "internal/spend", "internal/pager",
		"internal/stripeusage", "internal/openaiusage", "internal/openmeter"},
}

// noFunction are packages no Lambda main needs: the SDK's config loader,
// whose credential chain builds SSO, SSO OIDC, STS and sign-in clients at
// start though Lambda gives the credentials in the environment
// (internal/awsenv loads from there).
var noFunction = []string{"github.com/aws/aws-sdk-go-v2/config"}

// TestEachFunctionLinksOnlyWhatItUses lists each Lambda main's
// dependencies as `make build` builds it (linux/arm64, lambda.norpc) and
// fails if a main links a package that [uses] gives to other functions
// only, or one of [noFunction]: a bootstrap that carries another
// function's handler or provider SDK is larger and slower to start than
// its own work needs.
func TestEachFunctionLinksOnlyWhatItUses(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		fn := dir.Name()
		t.Run(fn, func(t *testing.T) {
			if _, ok := uses[fn]; !ok {
				t.Fatalf("functions/%s is not in uses: name the packages it links that other functions do not", fn)
			}
			for _, path := range goListDeps(t, root, "./functions/"+fn) {
				if owners := ownersOf(path); len(owners) > 0 && !slices.Contains(owners, fn) {
					t.Errorf("%s links %s, which belongs to %s", fn, path, strings.Join(owners, " and "))
				}
				if slices.Contains(noFunction, path) {
					t.Errorf("%s links %s, which no function needs", fn, path)
				}
			}
		})
	}
}

// importPath is pkg's import path: the module's packages are listed
// relative to it.
func importPath(pkg string) string {
	if strings.HasPrefix(pkg, "internal/") || strings.HasPrefix(pkg, "pkg/") {
		return module + pkg
	}
	return pkg
}

// ownersOf names the functions that [uses] gives the package at path
// to, or none when it is not listed.
func ownersOf(path string) []string {
	var fns []string
	for fn, pkgs := range uses {
		if slices.ContainsFunc(pkgs, func(pkg string) bool { return importPath(pkg) == path }) {
			fns = append(fns, fn)
		}
	}
	slices.Sort(fns)
	return fns
}

// goListDeps lists the packages pkg links when built as `make build`
// builds a function.
func goListDeps(t *testing.T, root, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	return strings.Fields(string(out))
}
