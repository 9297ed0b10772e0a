module github.com/hookline/hookline/internal/usagein/ceoracle

go 1.26.8

require (
	github.com/cloudevents/sdk-go/v2 v2.16.2
	github.com/hookline/hookline v0.0.0
)

require (
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

replace github.com/hookline/hookline => ../../..
