package lab

import (
	"encoding/json"
	"fmt"
	"os"
)

// Prices are list prices in USD, with the day and region they were read
// for. Units: per million requests or request units, per GB-second.
type Prices struct {
	Date                     string  `json:"date"`
	Region                   string  `json:"region"`
	APIGatewayHTTPPerMillion float64 `json:"api_gateway_http_per_million"`
	LambdaRequestsPerMillion float64 `json:"lambda_requests_per_million"`
	LambdaGBSecond           float64 `json:"lambda_gb_second"`
	LambdaMemoryMB           int     `json:"lambda_memory_mb"`
	SQSPerMillion            float64 `json:"sqs_requests_per_million"`
	DynamoDBWritePerMillion  float64 `json:"dynamodb_write_units_per_million"`
	DynamoDBReadPerMillion   float64 `json:"dynamodb_read_units_per_million"`
}

// DefaultPrices are us-east-1 list prices beyond the free tiers as
// published in January 2025: HTTP APIs, Lambda on arm64, SQS standard
// queues, DynamoDB on-demand. Pass a file of your own (LoadPrices) to
// update them.
func DefaultPrices() Prices {
	return Prices{
		Date: "2025-01", Region: "us-east-1",
		APIGatewayHTTPPerMillion: 1.00, LambdaRequestsPerMillion: 0.20, LambdaGBSecond: 0.0000133334, LambdaMemoryMB: 256,
		SQSPerMillion: 0.40, DynamoDBWritePerMillion: 0.625, DynamoDBReadPerMillion: 0.125,
	}
}

// LoadPrices reads a price table written as JSON with the fields of
// [Prices].
func LoadPrices(path string) (Prices, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Prices{}, fmt.Errorf("lab: prices: %w", err)
	}
	p := DefaultPrices()
	if err := json.Unmarshal(data, &p); err != nil {
		return Prices{}, fmt.Errorf("lab: prices %s: %w", path, err)
	}
	return p, nil
}

// Cost is what a million events cost, by service.
type Cost struct {
	APIGateway, Lambda, SQS, DynamoDB, Total float64
	// Prices names the table used.
	Prices string
}

// usage is what one event used on average.
type usage struct {
	requests      float64 // HTTP API requests
	invocations   float64 // Lambda invocations, receiver and worker
	lambdaSeconds float64 // Lambda run time
	sqsCalls      float64
	dynamoWrites  float64 // write request units
	dynamoReads   float64 // read request units
}

// costOf prices one event's usage for a million events: DynamoDB from
// the capacity units consumed ([Units]), on-demand.
func (p Prices) costOf(u usage) Cost {
	c := Cost{
		APIGateway: u.requests * p.APIGatewayHTTPPerMillion,
		Lambda:     u.invocations*p.LambdaRequestsPerMillion + u.lambdaSeconds*float64(p.LambdaMemoryMB)/1024*p.LambdaGBSecond*1e6,
		SQS:        u.sqsCalls * p.SQSPerMillion,
		DynamoDB:   u.dynamoWrites*p.DynamoDBWritePerMillion + u.dynamoReads*p.DynamoDBReadPerMillion,
		Prices:     fmt.Sprintf("%s list prices, %s", p.Region, p.Date),
	}
	c.Total = c.APIGateway + c.Lambda + c.SQS + c.DynamoDB
	return c
}
