package main

import (
	"runtime/debug"
	"strings"
)

// version is the module version and VCS revision the binary was built
// from: "v0.3.1 (rev 1a2b3c4, modified)", "(devel) (rev 1a2b3c4)", or
// "(devel)" when the build recorded neither.
func version(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "(unknown)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var extra []string
	if rev != "" {
		extra = append(extra, "rev "+rev[:min(7, len(rev))])
	}
	if modified {
		extra = append(extra, "modified")
	}
	if len(extra) > 0 {
		v += " (" + strings.Join(extra, ", ") + ")"
	}
	return v
}

func buildVersion() string { return version(debug.ReadBuildInfo()) }
