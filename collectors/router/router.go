// Package router knows the metric names of the routers that pick a
// replica for each request in front of the engines (llm-d's router and the
// Gateway API inference extension's endpoint picker), and attaches what
// they say to the engines' targets.
package router

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// Names of each family, newest first: llm-d's router (v0.9+) emits its
// llm_d_epp_ names beside the endpoint picker's older ones, which the
// Gateway API inference extension (≤ v1.5) emits alone.
var (
	// PerEndpointQueue is the waiting queue of each replica, as the
	// router reads it from the engine (model_server_endpoint or
	// model_server_pod names the replica).
	PerEndpointQueue = []string{"llm_d_epp_per_endpoint_queue_size", "inference_pool_per_pod_queue_size"}
	// AverageQueue is the mean of those queues over the pool.
	AverageQueue = []string{"llm_d_epp_average_queue_size", "inference_pool_average_queue_size"}
	// ReadyEndpoints counts the replicas the router may pick.
	ReadyEndpoints = []string{"llm_d_epp_ready_endpoints", "inference_pool_ready_pods"}
	// Decision times the router's pick of a replica for one request.
	Decision = []string{"llm_d_epp_scheduler_e2e_duration_seconds", "inference_extension_scheduler_e2e_duration_seconds"}
	// EndpointLabels name the replica in PerEndpointQueue.
	EndpointLabels = []string{"model_server_endpoint", "model_server_pod"}
)

func init() {
	engine.RegisterExporter(&engine.Exporter{Name: "router",
		Gauges:     [][]string{PerEndpointQueue, AverageQueue, ReadyEndpoints},
		Histograms: [][]string{Decision},
		Keep:       []string{"name", "model_server_endpoint", "model_server_pod"}})
}

// first returns the first of names the window holds.
func first(names []string, has func(string) bool) string {
	for _, n := range names {
		if has(n) {
			return n
		}
	}
	return ""
}

// Attach adds the router's evidence to the targets: that a router picks
// their replicas, how long it takes, and how its replicas' queues spread.
// A window holding no router metric adds nothing. The router's series carry
// the pool, not the model: with several targets each gets the pool's
// numbers, and a note says so.
func Attach(w *window.Window, evs []*evidence.Evidence) []string {
	if w == nil || len(evs) == 0 {
		return nil
	}
	gauge := first(PerEndpointQueue, func(n string) bool { return len(w.Gauges[n]) > 0 })
	dec := first(Decision, func(n string) bool { return len(w.Histograms[n]) > 0 })
	ready := first(ReadyEndpoints, func(n string) bool { return len(w.Gauges[n]) > 0 })
	if gauge == "" && dec == "" && ready == "" {
		return nil
	}
	var notes []string
	if len(evs) > 1 {
		notes = append(notes, fmt.Sprintf("the router's metrics name its pool, not a model: each of the %d targets is given the pool's numbers", len(evs)))
	}
	for _, e := range evs {
		v := &e.Values
		v.Cond.Router = 1
		e.Cite("cond.router", evidence.Source{Metric: first([]string{gauge, dec, ready}, func(n string) bool { return n != "" }), From: w.From})
		if dec != "" {
			by := map[float64]float64{}
			var sum, count float64
			for _, h := range w.Histograms[dec] {
				for _, b := range h.Buckets {
					by[b.UpperBound] += b.Count
				}
				sum += h.Sum
				count += h.Count
			}
			bk := make([]window.Bucket, 0, len(by))
			for _, ub := range slices.Sorted(maps.Keys(by)) {
				bk = append(bk, window.Bucket{UpperBound: ub, Count: by[ub]})
			}
			if count > 0 {
				d := evidence.Dist{Count: count, Mean: sum / count, P50: window.Quantile(0.5, bk), P90: window.Quantile(0.9, bk),
					P95: window.Quantile(0.95, bk), P99: window.Quantile(0.99, bk), Max: math.NaN()}
				v.Service.RouterDecision = d
				e.Cite("service.router_decision", evidence.Source{Metric: dec, From: w.From})
			}
		}
		if gauge != "" {
			// The busiest replica's share of the queued requests, at each
			// reading where any were queued, averaged.
			var shares []float64
			n := 0
			for _, g := range w.Gauges[gauge] {
				n = max(n, len(g.Points))
			}
			for i := range n {
				var top, all float64
				for _, g := range w.Gauges[gauge] {
					if i < len(g.Points) && evidence.Present(g.Points[i]) {
						top, all = math.Max(top, g.Points[i]), all+g.Points[i]
					}
				}
				if all > 0 {
					shares = append(shares, top/all)
				}
			}
			if len(shares) > 0 {
				s := evidence.Summarise(shares)
				v.Service.RouterQueueTopShare = s.Mean
				e.Cite("service.router_queue_top_share", evidence.Source{Metric: gauge, From: w.From,
					Note: fmt.Sprintf("the busiest endpoint's share of the queued requests, at the %d readings where any were queued", len(shares))})
			}
		}
	}
	return notes
}
