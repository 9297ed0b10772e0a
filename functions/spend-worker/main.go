package main

import "github.com/hookline/hookline/pkg/app"

func main() { app.Main(app.SpendWorker) }
