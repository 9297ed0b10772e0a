package main

import (
	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/spendfn"
)

func main() { app.Main(spendfn.Function) }
