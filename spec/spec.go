// Package spec embeds the rule catalogue, catalogue.md, so that programs
// built from this module (verbsim run, which names the rule behind each step
// of a scenario) carry it without a checkout. internal/catalogue parses it.
package spec

import _ "embed"

// Catalogue is the text of spec/catalogue.md.
//
//go:embed catalogue.md
var Catalogue []byte
