#!/bin/bash
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

echo "hookline: creating queues"
url_PaymentsDLQ="$(create_queue payments-dlq '{"MessageRetentionPeriod":"1209600","SqsManagedSseEnabled":"true","VisibilityTimeout":"30"}')"
arn_PaymentsDLQ="$(queue_arn "$url_PaymentsDLQ")"
url_UsageDLQ="$(create_queue usage-dlq '{"MessageRetentionPeriod":"1209600","SqsManagedSseEnabled":"true","VisibilityTimeout":"30"}')"
arn_UsageDLQ="$(queue_arn "$url_UsageDLQ")"
create_queue payments '{"MessageRetentionPeriod":"1209600","RedrivePolicy":"{\"deadLetterTargetArn\":\"'"$arn_PaymentsDLQ"'\",\"maxReceiveCount\":\"5\"}","SqsManagedSseEnabled":"true","VisibilityTimeout":"180"}' >/dev/null
create_queue usage '{"MessageRetentionPeriod":"1209600","RedrivePolicy":"{\"deadLetterTargetArn\":\"'"$arn_UsageDLQ"'\",\"maxReceiveCount\":\"5\"}","SqsManagedSseEnabled":"true","VisibilityTimeout":"180"}' >/dev/null

echo "hookline: creating tables"
if ! table_exists hookline-idempotency; then
  echo "hookline: table hookline-idempotency" >&2
  awslocal dynamodb create-table --table-name hookline-idempotency --billing-mode PAY_PER_REQUEST \
    --attribute-definitions AttributeName=pk,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH >/dev/null
  awslocal dynamodb wait table-exists --table-name hookline-idempotency
  awslocal dynamodb update-time-to-live --table-name hookline-idempotency --time-to-live-specification Enabled=true,AttributeName=expires_at >/dev/null
  awslocal dynamodb update-continuous-backups --table-name hookline-idempotency --point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null
fi
if ! table_exists hookline-intake; then
  echo "hookline: table hookline-intake" >&2
  awslocal dynamodb create-table --table-name hookline-intake --billing-mode PAY_PER_REQUEST \
    --attribute-definitions AttributeName=pk,AttributeType=S AttributeName=received_at,AttributeType=S AttributeName=source,AttributeType=S AttributeName=source_shard,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH \
    --global-secondary-indexes '[{"IndexName":"by_shard_received","KeySchema":[{"AttributeName":"source_shard","KeyType":"HASH"},{"AttributeName":"received_at","KeyType":"RANGE"}],"Projection":{"ProjectionType":"KEYS_ONLY"}},{"IndexName":"by_source_received","KeySchema":[{"AttributeName":"source","KeyType":"HASH"},{"AttributeName":"received_at","KeyType":"RANGE"}],"Projection":{"ProjectionType":"KEYS_ONLY"}}]' >/dev/null
  awslocal dynamodb wait table-exists --table-name hookline-intake
  awslocal dynamodb update-time-to-live --table-name hookline-intake --time-to-live-specification Enabled=true,AttributeName=expires_at >/dev/null
  awslocal dynamodb update-continuous-backups --table-name hookline-intake --point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null
fi
if ! table_exists hookline-ledger; then
  echo "hookline: table hookline-ledger" >&2
  awslocal dynamodb create-table --table-name hookline-ledger --billing-mode PAY_PER_REQUEST \
    --attribute-definitions AttributeName=gsi1pk,AttributeType=S AttributeName=gsi1sk,AttributeType=S AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
    --global-secondary-indexes '[{"IndexName":"gsi1","KeySchema":[{"AttributeName":"gsi1pk","KeyType":"HASH"},{"AttributeName":"gsi1sk","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}]' >/dev/null
  awslocal dynamodb wait table-exists --table-name hookline-ledger
  awslocal dynamodb update-continuous-backups --table-name hookline-ledger --point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null
fi
if ! table_exists hookline-workloads; then
  echo "hookline: table hookline-workloads" >&2
  awslocal dynamodb create-table --table-name hookline-workloads --billing-mode PAY_PER_REQUEST \
    --attribute-definitions AttributeName=gsi1pk,AttributeType=S AttributeName=gsi1sk,AttributeType=S AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
    --global-secondary-indexes '[{"IndexName":"gsi1","KeySchema":[{"AttributeName":"gsi1pk","KeyType":"HASH"},{"AttributeName":"gsi1sk","KeyType":"RANGE"}],"Projection":{"ProjectionType":"KEYS_ONLY"}}]' >/dev/null
  awslocal dynamodb wait table-exists --table-name hookline-workloads
  awslocal dynamodb update-time-to-live --table-name hookline-workloads --time-to-live-specification Enabled=true,AttributeName=expires_at >/dev/null
  awslocal dynamodb update-continuous-backups --table-name hookline-workloads --point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null
fi

echo "hookline: local resources ready"
