// Package ddb is the DynamoDB plumbing every store of this project shares:
// the client interface ([API]), item keys ([Key]), sortable timestamps
// ([Stamp], [ParseStamp]), typed reads over the SDK's attributevalue
// package ([Get], [QueryEach], the latter over the SDK's paginator) and
// the detection of a failed condition ([ConditionFailed]). Expressions are
// written with the SDK's expression builder everywhere; the ones a hot
// path makes on every call are built once as a [Template] and given their
// values per call.
package ddb
