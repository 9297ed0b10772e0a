// Command minimal is the cold-start baseline: a bootstrap that does nothing
// but start the Lambda runtime loop.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, map[string]any) (string, error) { return "ok", nil })
}
