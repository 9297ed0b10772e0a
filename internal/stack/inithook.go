package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// InitHookPath is where the generated LocalStack init hook is committed,
// relative to the repository root. localstack/docker-compose.yml mounts its
// directory at /etc/localstack/init/ready.d.
const InitHookPath = "localstack/init/ready.d/create-resources.sh"

// GenerateInitHook returns a bash script for LocalStack's ready.d hook that
// creates, with awslocal, the same queues and tables as t: dead-letter
// queues before the queues that redrive into them, each with its visibility
// timeout, retention, encryption and redrive policy; then every table,
// on-demand, with its keys, global secondary indexes, TTL and point-in-time
// recovery. The output depends only on t and is sorted, so it can be
// compared byte for byte with the committed file.
func GenerateInitHook(t *Template) []byte {
	var b bytes.Buffer
	b.WriteString(initHookHeader)
	b.WriteString("\necho \"hookline: creating queues\"\n")
	dlqs := t.deadLetterIDs()
	for _, q := range queueCreationOrder(t.Queues) {
		writeQueue(&b, q, dlqs[q.LogicalID])
	}
	b.WriteString("\necho \"hookline: creating tables\"\n")
	tables := slices.Clone(t.Tables)
	slices.SortFunc(tables, func(a, b Table) int { return strings.Compare(a.Name, b.Name) })
	for _, tb := range tables {
		writeTable(&b, tb)
	}
	b.WriteString("\necho \"hookline: local resources ready\"\n")
	return b.Bytes()
}

const initHookHeader = `#!/bin/bash
# Code generated from infra/template.yaml by stack.GenerateInitHook. DO NOT EDIT.
# Regenerate with: go test ./internal/stack -run InitHook -update
#
# LocalStack runs this once it is ready to serve requests. It creates the
# queues and tables that infra/template.yaml declares, so a local run against
# LocalStack sees the same resources as a deployment.
set -euo pipefail

# create_queue NAME ATTRIBUTES_JSON creates a queue unless it exists (the
# hook can run again on a persisted LocalStack) and prints its URL.
create_queue() {
  if awslocal sqs get-queue-url --queue-name "$1" --query QueueUrl --output text 2>/dev/null; then
    return
  fi
  echo "hookline: queue $1" >&2
  awslocal sqs create-queue --queue-name "$1" --attributes "$2" --query QueueUrl --output text
}

# queue_arn URL prints the ARN of the queue at URL.
queue_arn() {
  awslocal sqs get-queue-attributes --queue-url "$1" --attribute-names QueueArn --query Attributes.QueueArn --output text
}

# table_exists NAME succeeds when the table is already there, so that the
# hook can run again on a persisted LocalStack.
table_exists() {
  awslocal dynamodb describe-table --table-name "$1" >/dev/null 2>&1
}
`

// queueCreationOrder sorts queues by name, then moves every queue after the
// queue it redrives into, so that a redrive policy always names a queue that
// already exists. A redrive target missing from the template (which
// [CheckDeadLetterQueues] reports) does not hold a queue back.
func queueCreationOrder(queues []Queue) []Queue {
	pending := slices.Clone(queues)
	slices.SortFunc(pending, func(a, b Queue) int { return strings.Compare(a.Name, b.Name) })
	known := map[string]bool{}
	for _, q := range queues {
		known[q.LogicalID] = true
	}
	created := map[string]bool{}
	var out []Queue
	for len(pending) > 0 {
		var next []Queue
		for _, q := range pending {
			if q.DeadLetterQueue == "" || !known[q.DeadLetterQueue] || created[q.DeadLetterQueue] {
				out = append(out, q)
				created[q.LogicalID] = true
			} else {
				next = append(next, q)
			}
		}
		if len(next) == len(pending) { // a redrive cycle: emit the rest as they are
			return append(out, next...)
		}
		pending = next
	}
	return out
}

// arnPlaceholder stands for the redrive target's ARN inside the attribute
// JSON until the JSON has been quoted for the shell.
const arnPlaceholder = "@@DEAD_LETTER_TARGET_ARN@@"

func writeQueue(b *bytes.Buffer, q Queue, isTarget bool) {
	attrs := map[string]string{
		"MessageRetentionPeriod": strconv.Itoa(q.RetentionPeriod),
		"VisibilityTimeout":      strconv.Itoa(q.VisibilityTimeout),
	}
	if q.SSE {
		attrs["SqsManagedSseEnabled"] = "true"
	}
	if q.FIFO {
		attrs["FifoQueue"] = "true"
	}
	if q.DeadLetterQueue != "" {
		policy := mustJSON(map[string]string{
			"deadLetterTargetArn": arnPlaceholder,
			"maxReceiveCount":     strconv.Itoa(q.MaxReceiveCount),
		})
		attrs["RedrivePolicy"] = policy
	}
	arg := shellQuote(mustJSON(attrs)) // json.Marshal sorts map keys.
	if q.DeadLetterQueue != "" {
		arg = strings.Replace(arg, arnPlaceholder, `'"$`+arnVar(q.DeadLetterQueue)+`"'`, 1)
	}
	call := "create_queue " + shellWord(q.Name) + " " + arg
	if isTarget {
		// Assignments, so that set -e stops the hook if either call fails.
		fmt.Fprintf(b, "%s=\"$(%s)\"\n", urlVar(q.LogicalID), call)
		fmt.Fprintf(b, "%s=\"$(queue_arn \"$%s\")\"\n", arnVar(q.LogicalID), urlVar(q.LogicalID))
	} else {
		fmt.Fprintf(b, "%s >/dev/null\n", call)
	}
}

// urlVar and arnVar name the shell variables holding the URL and ARN of the
// queue with the given logical ID. Logical IDs are alphanumeric, so the
// names are always valid.
func urlVar(logicalID string) string { return "url_" + logicalID }

func arnVar(logicalID string) string { return "arn_" + logicalID }

type gsiJSON struct {
	IndexName  string
	KeySchema  []keyJSON
	Projection struct{ ProjectionType string }
}

type keyJSON struct {
	AttributeName string
	KeyType       string
}

func writeTable(b *bytes.Buffer, tb Table) {
	name := shellWord(tb.Name)
	attrs := map[string]string{}
	keys := func(hash KeyAttr, rng *KeyAttr) []keyJSON {
		attrs[hash.Name] = hash.Type
		ks := []keyJSON{{hash.Name, "HASH"}}
		if rng != nil {
			attrs[rng.Name] = rng.Type
			ks = append(ks, keyJSON{rng.Name, "RANGE"})
		}
		return ks
	}
	var keySchema []string
	for _, k := range keys(tb.Hash, tb.Range) {
		keySchema = append(keySchema, shellWord("AttributeName="+k.AttributeName+",KeyType="+k.KeyType))
	}
	var gsis []gsiJSON
	for _, idx := range tb.Indexes {
		g := gsiJSON{IndexName: idx.Name, KeySchema: keys(idx.Hash, idx.Range)}
		g.Projection.ProjectionType = idx.Projection
		gsis = append(gsis, g)
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	slices.Sort(names)
	var defs []string
	for _, n := range names {
		defs = append(defs, shellWord("AttributeName="+n+",AttributeType="+attrs[n]))
	}

	fmt.Fprintf(b, "if ! table_exists %s; then\n", name)
	fmt.Fprintf(b, "  echo \"hookline: table %s\" >&2\n", tb.Name)
	fmt.Fprintf(b, "  awslocal dynamodb create-table --table-name %s --billing-mode PAY_PER_REQUEST \\\n", name)
	fmt.Fprintf(b, "    --attribute-definitions %s \\\n", strings.Join(defs, " "))
	fmt.Fprintf(b, "    --key-schema %s", strings.Join(keySchema, " "))
	if len(gsis) > 0 {
		fmt.Fprintf(b, " \\\n    --global-secondary-indexes %s", shellQuote(mustJSON(gsis)))
	}
	b.WriteString(" >/dev/null\n")
	fmt.Fprintf(b, "  awslocal dynamodb wait table-exists --table-name %s\n", name)
	if tb.TTLAttribute != "" {
		fmt.Fprintf(b, "  awslocal dynamodb update-time-to-live --table-name %s --time-to-live-specification %s >/dev/null\n",
			name, shellWord("Enabled=true,AttributeName="+tb.TTLAttribute))
	}
	if tb.PITR {
		fmt.Fprintf(b, "  awslocal dynamodb update-continuous-backups --table-name %s --point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null\n", name)
	}
	b.WriteString("fi\n")
}

// mustJSON marshals values built above from strings only, which cannot fail.
func mustJSON(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(out)
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_.,=/:@+-]+$`)

// shellWord leaves a word that needs no quoting bare and quotes the rest.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return shellQuote(s)
}

// shellQuote wraps s in single quotes, which keep every byte but the single
// quote literal.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
