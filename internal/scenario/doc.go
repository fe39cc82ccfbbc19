// Package scenario runs verbsim's scenario files: small line-oriented
// scripts of verbs and engine controls, each step followed by the output it
// is expected to give, so that one file is at once a tutorial and a golden
// test. `verbsim run FILE` prints a file's annotated timeline; the tour
// (the files under tour/, embedded in the binary) is what `verbsim list`
// shows. docs/scenarios.md describes the language.
//
// A file is a sequence of steps separated by blank lines. A step is the
// narration above it (lines starting with "# "), one command line, and
// optionally "----" followed by the expected output, which ends at the next
// blank line:
//
//	# Arm the CQ for the next completion.
//	req_notify_cq cq=A next
//	----
//	ibv_req_notify_cq(A, solicited_only=0) = ok
//	...
//
// A command is a name followed by arguments: a bare word (the new object's
// name, or a flag such as next), key=value, or key=(v1,v2). Parse checks
// each command against the table WriteHelp prints and reports a malformed
// file as file:line: what was expected. Failed verbs are not errors of the
// script: their errno and message are part of the output.
//
// Output that differs between profiles is kept per profile inside the
// block, each part started by ">> profile NAME" (see Merge).
//
// The engine*.go files (engine_cm.go the connection manager) and state.go
// are the only files that call package sim.
package scenario

import "embed"

// Tour holds the built-in scenarios, tour/*.scen.
//
//go:embed tour/*.scen
var Tour embed.FS
