package probe

// finish derives what the whole probe shows: the decode floor, the knee,
// the capacity and the diagnosis of the load that decides it.
func (r *runner) finish() {
	res := r.res
	res.Stopped = r.stopped
	derive(res)
	// The diagnosis shown: the lowest load that missed the SLO says what
	// breaks first; when every load met it, the highest load measured.
	pick := -1
	for _, i := range ByLoad(res.Steps) {
		if !res.Steps[i].MeetsSLO && res.Steps[i].Completed > 0 {
			pick = i
			break
		}
	}
	if pick < 0 {
		idx := ByLoad(res.Steps)
		for k := len(idx) - 1; k >= 0; k-- {
			if res.Steps[idx[k]].Completed > 0 {
				pick = idx[k]
				break
			}
		}
	}
	for _, sd := range r.diagnoses {
		if sd.step == pick {
			res.Diagnosis, res.DiagnosedStep, res.diagnosedInput = sd.d, pick, sd.in
		}
	}
	if c := res.Capacity; c != nil && res.Steps[c.Step].ClientLimited {
		r.note("the probe's own rate or concurrency limit held requests back at the capacity's load: the server may take more")
	}
	res.LaunchDiagnosis, res.launchInput = r.launchDiagnosis, r.launchInput
	// JSON readers get arrays, empty when nothing ran, never null.
	if res.Steps == nil {
		res.Steps = []Step{}
	}
	if res.Sweep.Samples == nil {
		res.Sweep.Samples = []Sample{}
	}
	if !r.o.KeepRequests {
		for i := range res.Steps {
			res.Steps[i].Requests = nil
		}
		if res.Launch != nil {
			res.Launch.Requests = nil
		}
	}
}
