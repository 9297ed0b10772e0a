// Command admission answers GET /workloads/{id}/admission for producers.
package main
