package main

import "strings"

// exitStatus is the exit-status section every command's long help ends
// with: one code a line, in the order of the codes.
func exitStatus(codes ...string) string {
	return "\n\nExit status:\n  " + strings.Join(codes, "\n  ")
}

// The codes as every command means them.
const (
	exitBadUsage = "2  bad usage, unreadable input or an unreachable server: one line on stderr"
	exitRan      = "0  it ran"
)
