// Command spend-worker is the spend worker Lambda on the usage queue.
package main
