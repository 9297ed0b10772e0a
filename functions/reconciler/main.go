package main

import (
	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/reconcilerfn"
)

func main() { app.Main(reconcilerfn.Function) }
