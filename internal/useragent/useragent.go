// Package useragent is the User-Agent llmdoctor sends to every server it
// reads (Prometheus, engines' /metrics, exporters): operators can tell its
// queries from their dashboards' in their logs.
package useragent

import "runtime/debug"

// String is "llmdoctor/VERSION", VERSION the module version the binary was
// built as, or "devel", with the VCS revision as a comment when recorded.
var String = of(debug.ReadBuildInfo())

func of(info *debug.BuildInfo, ok bool) string {
	v := "devel"
	if ok && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	s := "llmdoctor/" + v
	if ok && info != nil {
		for _, kv := range info.Settings {
			if kv.Key == "vcs.revision" && kv.Value != "" {
				s += " (rev " + kv.Value[:min(7, len(kv.Value))] + ")"
			}
		}
	}
	return s
}
