package evidence

// Curve documents a point series evidence may carry for charts.
type Curve struct {
	// X and Y say what the coordinates are, with their units.
	X, Y string
	// Paths are the evidence nodes the curve draws: it is dropped from a
	// report when any of them is withheld as inconsistent.
	Paths []string
}

// Curves documents the keys of Evidence.Curves. Time series take x as
// seconds from the window's start.
var Curves = map[string]Curve{
	"prompt_ttft":    {X: "prompt tokens", Y: "median TTFT (s) of the requests in the length band", Paths: []string{"cond.prompt_ttft_slope", "service.client_ttft"}},
	"ttft_p99_steps": {X: "seconds into the window (end of the step)", Y: "TTFT p99 of the step (s)", Paths: []string{"stage.ttft", "stage.ttft_p99_steps"}},
	"ttft_p50_steps": {X: "seconds into the window (end of the step)", Y: "TTFT p50 of the step (s)", Paths: []string{"stage.ttft", "stage.ttft_p99_steps"}},
	"running":        {X: "seconds into the window", Y: "requests running", Paths: []string{"service.running"}},
	"waiting":        {X: "seconds into the window", Y: "requests waiting", Paths: []string{"service.waiting"}},
	"kv_usage":       {X: "seconds into the window", Y: "KV cache usage (ratio)", Paths: []string{"resource.kv_usage"}},
	"dram_active":    {X: "seconds into the window", Y: "GPU DRAM active (ratio, mean over the target's GPUs)", Paths: []string{"resource.dram_active"}},
	"tensor_active":  {X: "seconds into the window", Y: "GPU tensor pipe active (ratio, mean over the target's GPUs)", Paths: []string{"resource.tensor_active"}},
}

// CurveOf returns the curve key that draws the series at path, or "".
func CurveOf(path string) string {
	for k, c := range Curves {
		if len(c.Paths) == 1 && c.Paths[0] == path {
			return k
		}
	}
	return ""
}

// TrustedCurves returns the curves whose nodes are all consistent, with
// their finite points only; nil when there are none.
func (e *Evidence) TrustedCurves() map[string][][2]float64 {
	var out map[string][][2]float64
	for k, pts := range e.Curves {
		if len(pts) == 0 {
			continue
		}
		ok := true
		for _, p := range Curves[k].Paths {
			if e.Inconsistent(p) != "" {
				ok = false
			}
		}
		if !ok {
			continue
		}
		// A point that is no number is no data (and no JSON).
		var keep [][2]float64
		for _, p := range pts {
			if Present(p[0]) && Present(p[1]) {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			if out == nil {
				out = map[string][][2]float64{}
			}
			out[k] = keep
		}
	}
	return out
}
