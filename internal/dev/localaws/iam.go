package localaws

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hookline/hookline/internal/stack"
)

// The template's grants, enforced. In a local run each function calls
// with credentials of its own ([Env.FunctionClients]), whose access key ID
// names it ([AccessKeyID]). The embedded DynamoDB and the SQS front read
// the key ID from the request's SigV4 Authorization header and, when it
// names a template function, authorise the call against that function's
// inline policy statements ([stack.Function.Statements]) as IAM does:
// only what some Allow statement grants, action and resource both, with
// * and ? matching inside either. A call that needs several
// authorisations (a batch over tables, a transaction's items) needs all
// of them. Denied, the call is answered as AWS answers it and nothing of
// it runs. Calls with any other credentials (the harness's, tests') are
// not checked.

// accessKeyPrefix starts every function's access key ID.
const accessKeyPrefix = "LOCALFN"

// localAccount is the account of the functions' roles in denials.
const localAccount = "000000000000"

// AccessKeyID returns the access key ID that a template function (by
// logical ID) calls with in a local run.
func AccessKeyID(function string) string { return accessKeyPrefix + function }

// request is one authorisation a call needs: an IAM action on a
// resource's ARN.
type request struct{ action, resource string }

// grant is one Allow statement, its resources resolved to local ARNs.
type grant struct{ actions, resources []string }

// principal is a template function as IAM sees it: its role session's
// ARN and its grants.
type principal struct {
	arn    string
	grants []grant
}

// allows reports whether some grant allows r: an action and a resource of
// the same statement both match it.
func (p *principal) allows(r request) bool {
	for _, g := range p.grants {
		if matchesAny(g.actions, r.action, true) && matchesAny(g.resources, r.resource, false) {
			return true
		}
	}
	return false
}

// denied returns the first of rs that p is not allowed.
func (p *principal) denied(rs []request) (request, bool) {
	for _, r := range rs {
		if !p.allows(r) {
			return r, true
		}
	}
	return request{}, false
}

// message is AWS's text for a denial of r.
func (p *principal) message(r request) string {
	return fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action",
		p.arn, r.action, r.resource, r.action)
}

// policies are the template functions by access key ID, and the local
// ARNs of the template's queues by deployed name; another queue's ARN is
// queueARNPrefix and its name.
type policies struct {
	principals     map[string]*principal
	queueARNs      map[string]string
	queueARNPrefix string
}

// grants is the enforcement the fronts share. Until it holds policies
// (while the resources are created, or against an external endpoint) it
// checks nothing.
type grants struct {
	p atomic.Pointer[policies]

	mu      sync.Mutex
	denials []string // distinct, first maxDenials
}

// maxDenials bounds the denials kept for [Env.Denials].
const maxDenials = 100

// deny records a denial's message and returns it.
func (g *grants) deny(p *principal, r request) string {
	msg := p.message(r)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.denials) < maxDenials && !slices.Contains(g.denials, msg) {
		g.denials = append(g.denials, msg)
	}
	return msg
}

// Denials returns the distinct messages of the calls the embedded DynamoDB
// and SQS refused to template functions so far, as AWS would have (the
// first 100), so that a test can tell a missing grant from other
// failures.
func (e *Env) Denials() []string {
	e.grants.mu.Lock()
	defer e.grants.mu.Unlock()
	return slices.Clone(e.grants.denials)
}

// caller returns the policies and the template function whose
// credentials signed r, or a nil principal when they name none.
func (g *grants) caller(r *http.Request) (*policies, *principal) {
	if g == nil {
		return nil, nil
	}
	p := g.p.Load()
	if p == nil {
		return nil, nil
	}
	key := accessKeyOf(r)
	if !strings.HasPrefix(key, accessKeyPrefix) {
		return nil, nil
	}
	return p, p.principals[key]
}

// accessKeyOf returns the access key ID of a SigV4 Authorization header
// ("AWS4-HMAC-SHA256 Credential=AKID/date/region/service/aws4_request,
// ..."), or "" for an unsigned request.
func accessKeyOf(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(cred, "/")
	return key
}

// enforceGrants makes the embedded fronts check the calls of the
// template's functions from now on.
func (e *Env) enforceGrants() {
	p := &policies{principals: map[string]*principal{}, queueARNs: map[string]string{}}
	for _, q := range e.Template.Queues {
		arn := e.queueARNs[q.LogicalID]
		p.queueARNs[queueName(e.queueURLs[q.LogicalID])] = arn
		p.queueARNPrefix = arn[:strings.LastIndexByte(arn, ':')+1]
	}
	for _, f := range e.Template.Functions {
		p.principals[AccessKeyID(f.LogicalID)] = e.principalOf(f)
	}
	e.grants.p.Store(p)
}

// principalOf resolves a function's Allow statements against this Env.
// Deny statements are not modelled: the template has none (what no Allow
// grants is denied anyway).
func (e *Env) principalOf(f stack.Function) *principal {
	p := &principal{arn: fmt.Sprintf("arn:aws:sts::%s:assumed-role/%sRole/%s", localAccount, f.LogicalID, f.LogicalID)}
	for _, s := range f.Statements {
		if !strings.EqualFold(s.Effect, "Allow") {
			continue
		}
		g := grant{actions: s.Action}
		for _, r := range s.Resource {
			if arn := e.resourceARN(r); arn != "" {
				g.resources = append(g.resources, arn)
			}
		}
		p.grants = append(p.grants, g)
	}
	return p
}

// resourceARN resolves a statement's resource as the template parser
// gives it: "getatt:X.Arn" is X's local ARN, "ref:X" what !Ref gives (a
// table's name, a queue's URL), and a !Sub such as "${X.Arn}/index/*",
// which the parser gives as "X/index/*", has X's ARN put back in front.
// A branch an !If leaves out ("<nil>") is no resource.
func (e *Env) resourceARN(v string) string {
	switch {
	case v == "" || v == "<nil>":
		return ""
	case strings.HasPrefix(v, "getatt:") && strings.HasSuffix(v, ".Arn"):
		if arn := e.arnOf(stack.LogicalID(v)); arn != "" {
			return arn
		}
		return v
	case strings.HasPrefix(v, "ref:"):
		return e.Resolve(v)
	}
	id, _, _ := strings.Cut(v, "/")
	if arn := e.arnOf(id); arn != "" {
		return arn + v[len(id):]
	}
	return v
}

// arnOf returns the local ARN of a template table or queue by logical ID,
// or "".
func (e *Env) arnOf(id string) string {
	if q, ok := e.Template.Queue(id); ok && q.LogicalID == id {
		return e.queueARNs[id]
	}
	if tb, ok := e.Template.Table(id); ok && tb.LogicalID == id {
		return tableARN(e.tables[id])
	}
	return ""
}

// tableARN is the local ARN of a table named as a request names it: by
// name, or already by ARN.
func tableARN(name string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	return localARN + name
}

// queueName is the last path segment of a queue URL.
func queueName(url string) string {
	return url[strings.LastIndexByte(url, '/')+1:]
}

// matchesAny reports whether one of patterns matches s; actions match
// without regard to case, as IAM matches them.
func matchesAny(patterns []string, s string, foldCase bool) bool {
	if foldCase {
		s = strings.ToLower(s)
	}
	for _, p := range patterns {
		if foldCase {
			p = strings.ToLower(p)
		}
		if wildcardMatch(p, s) {
			return true
		}
	}
	return false
}

// wildcardMatch matches s against an IAM pattern, in which * stands for
// any run of characters (none too) and ? for any one.
func wildcardMatch(pattern, s string) bool {
	// Greedy with backtracking to the last *: linear for patterns with
	// one *, as IAM's resources have.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p, i = p+1, i+1
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
