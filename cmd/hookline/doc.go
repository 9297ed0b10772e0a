// Command hookline is the operator's tool: it runs the system locally,
// sends signed test webhooks, explains pages, inspects and redrives
// dead-letter queues and replays intake.
//
//	hookline run
//	hookline help
package main
