package period_test

import (
	"go/parser"
	"go/token"
	"strconv"
	"testing"
	"time"
)

// TestZoneinfoIsEmbedded keeps the time/tzdata import that lets a Lambda
// binary, whose runtime has no zoneinfo, load IANA zones.
func TestZoneinfoIsEmbedded(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	embedded := false
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == "time/tzdata" {
			embedded = true
		}
	}
	if !embedded {
		t.Fatal("doc.go does not import time/tzdata")
	}
	for _, name := range append(propertyZones, "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Pacific/Apia") {
		if _, err := time.LoadLocation(name); err != nil {
			t.Errorf("LoadLocation(%s): %v", name, err)
		}
	}
}
