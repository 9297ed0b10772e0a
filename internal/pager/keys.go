package pager

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// The key layout of the outbox items, spelled here once; the package
// documentation draws it.

// indexName is the table's secondary index that lists pages by status.
const indexName = "gsi1"

const (
	prefixPage   = "PAGE#"
	skPage       = "PAGE"
	prefixStatus = "OUTBOX#"
)

// pagePK is the partition key of a page, "PAGE#<dedup key>".
func pagePK(dedupKey string) string { return prefixPage + dedupKey }

// pageKey is the key of a page's item.
func pageKey(dedupKey string) map[string]types.AttributeValue {
	return ddb.Key(pagePK(dedupKey), skPage)
}

// statusPartition is the gsi1 partition of the pages in a status,
// "OUTBOX#<status>".
func statusPartition(status string) string { return prefixStatus + status }

// statusSK orders a status partition by time: "<stamp>#<dedup key>".
func statusSK(stamp, dedupKey string) string { return stamp + "#" + dedupKey }
