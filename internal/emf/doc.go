// Package emf writes CloudWatch Embedded Metric Format (EMF) log lines.
//
// An EMF line is a plain JSON object on one line. Its "_aws" member tells
// CloudWatch Logs which top-level members are metrics and which are
// dimensions; every other member is an ordinary log property that stays
// searchable. A Lambda function's standard output is shipped to CloudWatch
// Logs, so writing these lines there is all it takes to publish metrics.
// See the package example.
//
// Several metrics can share one line, and so one set of dimensions: see
// [Logger.Entry].
//
// A [Logger] is safe for concurrent use: each line is written with one Write
// call under a mutex. A nil *Logger discards everything, so metrics can be
// optional in a constructor's Config.
package emf
