package provider

import "context"

// ResumeCharge is [Client.ChargeOnce] for a key that an earlier attempt may
// already have used: a worker that took over an expired claim, or a
// redelivered message. It looks the charge up first and charges only if the
// provider has none under key, so a holder that died after charging is
// never followed by a second charge.
func (c *Client) ResumeCharge(ctx context.Context, key string, req ChargeRequest) Result {
	if err := validateCharge(key, req); err != nil {
		return Result{Outcome: Rejected, Err: err}
	}
	ch, found, err := c.LookupCharge(ctx, key)
	if err != nil {
		return Result{Outcome: Unknown, Err: err}
	}
	if found {
		return fromLookup(key, req, ch, 1)
	}
	return c.ChargeOnce(ctx, key, req)
}
