// Package simtest turns simulated windows into what tests feed Prometheus:
// OpenMetrics for promtool and backfilled TSDBs of one engine or a fleet.
package simtest

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/sim"
)

// Deployment is one simulated engine and its GPUs as Prometheus would hold
// them after scraping both: the scenario's engine series (vLLM's, with
// model_name, and cache_config_info, without) carry Labels, its
// dcgm-exporter series (without model_name) GPULabels.
type Deployment struct {
	Scenario string
	// Labels are added to every engine series: the scrape target's
	// instance, pod, namespace.
	Labels map[string]string
	// GPULabels are added to every DCGM series: the exporter's instance,
	// the workload's pod and namespace in Kubernetes mode. A Hostname here
	// replaces the simulator's.
	GPULabels map[string]string
}

// Deployments writes the deployments' windows, all ending at the same time,
// as one OpenMetrics file (every family's samples under its one header) and
// returns its path and the windows' end. Each runs for warm-up plus
// 15 minutes from epoch, sampled every step; their GPUs' UUIDs are told
// apart.
func Deployments(tb testing.TB, dir, name string, epoch time.Time, step time.Duration, ds []Deployment) (string, time.Time) {
	tb.Helper()
	var order []string
	head := map[string][]string{}
	body := map[string][]string{}
	var end time.Time
	for i, d := range ds {
		sc, err := sim.Load(d.Scenario)
		if err != nil {
			tb.Fatal(err)
		}
		sc.Warmup, sc.Duration = time.Minute, 15*time.Minute
		var b strings.Builder
		if err := (sim.Offline{OpenMetrics: &b, Step: step, Epoch: epoch}).Run(sc); err != nil {
			tb.Fatal(err)
		}
		end = epoch.Add(sc.Warmup + sc.Duration)
		family := ""
		for _, l := range strings.Split(b.String(), "\n") {
			switch {
			case l == "" || l == "# EOF":
			case strings.HasPrefix(l, "#"):
				family = strings.Fields(l)[2]
				if _, ok := head[family]; !ok {
					order = append(order, family)
				}
				if len(head[family]) < 2 {
					head[family] = append(head[family], l)
				}
			default:
				labels := d.Labels
				if strings.HasPrefix(l, "DCGM_") {
					labels = maps.Clone(d.GPULabels)
					if h, ok := labels["Hostname"]; ok {
						l = strings.Replace(l, `Hostname="llmdoctor-sim"`, fmt.Sprintf("Hostname=%q", h), 1)
						delete(labels, "Hostname")
					}
					l = strings.Replace(l, "-sim0-", fmt.Sprintf("-sim%d-", i), 1)
				}
				k := strings.IndexByte(l, '{')
				var add strings.Builder
				for _, n := range slices.Sorted(maps.Keys(labels)) {
					fmt.Fprintf(&add, "%s=%q,", n, labels[n])
				}
				body[family] = append(body[family], l[:k+1]+add.String()+l[k+1:])
			}
		}
	}
	path := filepath.Join(dir, name+".om")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, fam := range order {
		for _, h := range head[fam] {
			fmt.Fprintln(w, h)
		}
		for _, l := range body[fam] {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path, end
}
