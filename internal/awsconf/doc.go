// Package awsconf builds the AWS SDK clients hookline uses, once per
// process, from the standard credential chain and the AWS_ENDPOINT_URL*
// variables.
//
// The same code runs in Lambda, against LocalStack at
// http://localhost:4566 and against the embedded local AWS: only the
// endpoint variables differ. [DynamoDB] and [SQS] take an explicit endpoint
// as well; an empty one keeps the SDK's own resolution. See the package
// example.
package awsconf
