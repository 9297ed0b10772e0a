// Command payment-worker is the payment worker Lambda on the payments queue.
package main
