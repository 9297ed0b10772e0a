// Package awsenv configures the AWS SDK from the environment alone, as
// Lambda gives it to a function, and builds the clients hookline uses.
//
// It does not import the SDK's config package: that package's credential
// chain brings the SSO, SSO OIDC, STS and sign-in clients, whose
// serialisation schemas are built at program start whether or not they
// are used, and cost a Lambda bootstrap about 0.6 MB and their init time.
// In Lambda the execution role's credentials are always in the
// environment, so the Lambda mains load with [Load]; the CLI and the local
// run use internal/awsconf, which keeps the full chain and builds its
// clients here.
package awsenv
