package infra

import _ "embed"

// Template is infra/template.yaml as built into the binary, so that tools
// such as the hookline CLI resolve queue and table names from any working
// directory.
//
//go:embed template.yaml
var Template []byte
