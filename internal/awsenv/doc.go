// Package awsenv configures the AWS SDK from the environment alone, as
// Lambda gives it to a function, and builds the DynamoDB and Secrets
// Manager clients hookline uses.
//
// It does not import the SDK's config package: that package's credential
// chain brings the SSO, SSO OIDC, STS and sign-in clients, whose
// serialisation schemas are built at program start whether or not they
// are used, and cost a Lambda bootstrap about 0.6 MB and their init time.
// In Lambda the execution role's credentials are always in the
// environment, so the Lambda mains load with [Load]; the CLI and the local
// run use internal/awsconf, which keeps the full chain and builds its
// clients here.
//
// It does not import the SQS SDK either, for the same reason: an AWS
// service package builds its schemas at start once it is linked, used or
// not (about 0.2 MB a bootstrap), and the admission function and the
// reconciler use no queue. The functions that do build their SQS client
// with sqs.NewFromConfig on the [aws.Config] of [Load].
package awsenv
