package main

import "github.com/hookline/hookline/internal/app"

func main() { app.Main(app.SpendWorker) }
