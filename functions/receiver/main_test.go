package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/pkg/webhook"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// build compiles a package the way `make build` does (lambda.norpc, no
// cgo), for this machine so the emulator can run it.
func build(t *testing.T, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestBootstrapUnderRuntimeInterfaceEmulator builds the real receiver
// bootstrap and invokes it once under aws-lambda-rie against local AWS.
func TestBootstrapUnderRuntimeInterfaceEmulator(t *testing.T) {
	env := localaws.StartForTest(t)
	dir := t.TempDir()
	build(t, filepath.Join(dir, "bootstrap"), ".")
	build(t, filepath.Join(dir, "aws-lambda-rie"), "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie")

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(filepath.Join(dir, "aws-lambda-rie"), "--runtime-interface-emulator-address", addr, filepath.Join(dir, "bootstrap"))
	cmd.Env = append(os.Environ(),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB="+env.DynamoEndpoint, "AWS_ENDPOINT_URL_SQS="+env.SQSEndpoint,
		"INTAKE_TABLE="+env.TableName("IntakeTable"),
		"QUEUE_URL_PAYMENTS="+env.QueueURL("payments"),
		`HOOKLINE_SOURCES=[{"name":"payments","scheme":"standard-webhooks","secret_env":"PAYMENTS_SECRETS","queue":"payments"}]`,
		"PAYMENTS_SECRETS="+testSecret,
	)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	body := `{"type":"payment.requested","data":{"customer":"cus_1","amount":100,"currency":"usd"}}`
	sig, err := webhook.SignStandard(testSecret, "msg_rie_1", time.Now(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "ANY /webhooks/{source}", RawPath: "/webhooks/payments", Body: body,
		PathParameters: map[string]string{"source": "payments"},
		Headers:        map[string]string{"webhook-id": "msg_rie_1", "webhook-timestamp": fmt.Sprint(time.Now().Unix()), "webhook-signature": sig},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "rie-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}},
	}
	resp := invoke(t, addr, req)
	if resp.StatusCode != 200 || resp.Body != `{"status":"accepted"}` {
		t.Fatalf("invoke = %d %s\nemulator log:\n%s", resp.StatusCode, resp.Body, logs.String())
	}
}

// invoke posts one event to the emulator, retrying while it starts.
func invoke(t *testing.T, addr string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	payload, _ := json.Marshal(req)
	url := "http://" + addr + "/2015-03-31/functions/function/invocations"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		res, err := http.DefaultClient.Do(hreq)
		if err == nil {
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			var out events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatalf("emulator answered %d %s", res.StatusCode, b)
			}
			return out
		}
		if ctx.Err() != nil {
			t.Fatalf("emulator never answered: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
