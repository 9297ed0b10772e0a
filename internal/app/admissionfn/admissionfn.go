package admissionfn

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/admission"
	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/awsenv"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/spend"
)

// Function is the admission endpoint, invoked by the HTTP API. It uses
// DynamoDB only: its environment names no secret.
var Function = app.Function{Name: "admission",
	Clients: func(cfg aws.Config) app.Clients { return app.Clients{DynamoDB: awsenv.DynamoDB(cfg, "")} },
	Build: func(d app.Deps) (app.Handler, error) {
		return app.Built(d, New, func(h *admission.Handler) app.Handler { return app.Handler{HTTP: h.Handle} })
	}}

// New builds the admission endpoint from its environment: it reads the
// workloads table only (WORKLOADS_TABLE), matching its read-only IAM
// policy.
func New(d app.Deps) (*admission.Handler, error) {
	table, err := config.AdmissionFromEnv(d.Lookup)
	if err != nil {
		return nil, err
	}
	r, err := spend.NewReader(d.Clients.DynamoDB, table, d.Now)
	if err != nil {
		return nil, err
	}
	return admission.New(r, d.Log())
}
