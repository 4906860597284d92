package sim

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Router puts a router in front of several replicas of the engine, as
// llm-d's endpoint picker (the Gateway API inference extension) does: it
// picks a replica for each request by its policy, and exports the
// endpoint picker's metrics.
type Router struct {
	// Replicas is how many engines serve behind it (2 or more).
	Replicas int `yaml:"replicas"`
	// Policy picks the replica: round-robin, least-waiting (the shortest
	// queue, as the queue scorer alone does), or prefix (the replica that
	// served the request's system prompt before, as a prefix-cache scorer
	// weighted over the load scorers does).
	Policy string `yaml:"policy"`
	// Decision is the router's mean time to pick (default 1ms).
	Decision time.Duration `yaml:"decision,omitempty"`
}

// RouterPolicies are the policies a Router may have.
var RouterPolicies = []string{"round-robin", "least-waiting", "prefix"}

func (r *Router) check(name string) error {
	if r.Replicas < 2 || r.Replicas > 64 || !slices.Contains(RouterPolicies, r.Policy) || r.Decision < 0 {
		return fmt.Errorf("scenario %s: router needs 2 to 64 replicas and a policy (round-robin, least-waiting or prefix)", name)
	}
	return nil
}

// routerState is what the router keeps: its replicas, its turn, and its
// own metrics.
type routerState struct {
	replicas []*Engine // all of them, this engine first
	next     int
	picked   []float64 // requests sent to each replica
	decision *hist
	rng      *randSource
}

// randSource draws the router's decision times apart from the traffic.
type randSource struct{ x uint64 }

func (s *randSource) float() float64 {
	// xorshift64*: the router's own stream, so its draws leave the
	// scenario's requests as they are.
	s.x ^= s.x >> 12
	s.x ^= s.x << 25
	s.x ^= s.x >> 27
	return float64((s.x*2685821657736338717)>>11) / (1 << 53)
}

// newRouter builds the other replicas of e behind a router.
func newRouter(e *Engine) error {
	rc := e.sc.Router
	st := &routerState{replicas: []*Engine{e}, picked: make([]float64, rc.Replicas),
		decision: newHist("inference_extension_scheduler_e2e_duration_seconds", "End-to-end scheduling latency distribution in seconds.",
			[]float64{0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1}),
		rng: &randSource{x: uint64(e.sc.Seed)*0x9E3779B97F4A7C15 | 1}}
	for i := 1; i < rc.Replicas; i++ {
		rs := *e.sc
		rs.Router = nil
		rs.Seed = e.sc.Seed + int64(i)
		p, err := New(&rs, e.keepRecords)
		if err != nil {
			return err
		}
		p.nextArrival = math.Inf(1)
		p.replica = i
		st.replicas = append(st.replicas, p)
	}
	e.router = st
	return nil
}

// route sends a new request to the replica the policy picks.
func (e *Engine) route(r *request) {
	st := e.router
	at := r.arrival
	pick := 0
	switch e.sc.Router.Policy {
	case "round-robin":
		pick = st.next % len(st.replicas)
		st.next++
	case "least-waiting":
		best := math.Inf(1)
		for i, x := range st.replicas {
			if x != e {
				x.AdvanceTo(at)
			}
			if q := float64(len(x.waiting)+x.pending.Len()) + float64(len(x.running))/1e6; q < best {
				best, pick = q, i
			}
		}
	case "prefix":
		if r.group >= 0 {
			pick = r.group % len(st.replicas)
		} else {
			pick = st.next % len(st.replicas)
			st.next++
		}
	}
	st.picked[pick]++
	mean := 0.001
	if d := e.sc.Router.Decision; d > 0 {
		mean = d.Seconds()
	}
	st.decision.own(mean * (0.5 + st.rng.float()))
	x := st.replicas[pick]
	if x != e {
		x.AdvanceTo(at)
	}
	heap.Push(&x.pending, r)
}

// Replicas are the engines behind the scenario's router, this one first
// (itself alone without a router).
func (e *Engine) Replicas() []*Engine {
	if e.router == nil {
		return []*Engine{e}
	}
	return e.router.replicas
}

// routerCollector exposes the router's metrics with the names the Gateway
// API inference extension's endpoint picker (≤ v1.5) and llm-d's router
// (which still emits them beside its llm_d_epp_ names) give them.
type routerCollector struct{ e *Engine }

func (c routerCollector) Describe(chan<- *prometheus.Desc) {}

func (c routerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.e.router
	pool := "llmdoctor-sim-pool"
	gauge := func(name, help string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, []string{"name"}, nil), prometheus.GaugeValue, v, pool)
	}
	var sum, sq float64
	per := prometheus.NewDesc("inference_pool_per_pod_queue_size", "The total number of requests pending in the model server queue for each underlying pod.",
		[]string{"name", "model_server_pod"}, nil)
	for i, x := range st.replicas {
		q := float64(len(x.waiting) + len(x.loading))
		sum += q
		sq += q * q
		ch <- prometheus.MustNewConstMetric(per, prometheus.GaugeValue, q, pool, ReplicaPod(i)+"-rank-0")
	}
	n := float64(len(st.replicas))
	gauge("inference_pool_average_queue_size", "The average number of requests pending in the model server queue.", sum/n)
	gauge("inference_pool_ready_pods", "The number of ready pods in the inference server pool.", n)
	ch <- st.decision.metric(nil, nil)
	req := prometheus.NewDesc("inference_objective_request_total", "Counter of inference objective requests broken out for each model and target model.",
		[]string{"model_name", "target_model_name"}, nil)
	var total float64
	for _, p := range st.picked {
		total += p
	}
	ch <- prometheus.MustNewConstMetric(req, prometheus.CounterValue, total, c.e.model.Served, c.e.model.Served)
}

// ReplicaPod names replica i's pod, as the router's per-pod series and a
// Prometheus scraping the replicas label it.
func ReplicaPod(i int) string { return "replica-" + strconv.Itoa(i) }

// RouterRegistry is the router's /metrics (nil without a router).
func (e *Engine) RouterRegistry() *prometheus.Registry {
	if e.router == nil {
		return nil
	}
	r := prometheus.NewRegistry()
	r.MustRegister(routerCollector{e})
	return r
}
