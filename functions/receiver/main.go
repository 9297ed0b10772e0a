package main

import (
	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/receiverfn"
)

func main() { app.Main(receiverfn.Function) }
