package main

import (
	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/admissionfn"
)

func main() { app.Main(admissionfn.Function) }
