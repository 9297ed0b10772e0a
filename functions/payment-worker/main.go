package main

import (
	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/paymentfn"
)

func main() { app.Main(paymentfn.Function) }
