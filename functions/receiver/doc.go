// Command receiver is the webhook receiver Lambda behind the HTTP API.
package main
