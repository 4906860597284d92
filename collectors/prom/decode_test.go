package prom

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/common/model"
)

var decodeSeeds = []string{
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"x","llmdoctor_branch":"x value","le":"+Inf"},"value":[1767226560.5,"3"]}]}}`,
	`{"status":"success","warnings":["w"],"data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"NaN"],[2,"+Inf"],[3,"-1e3"]]}]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{"count":"1","sum":"2"}]}]}}`,
	`{"status":"success","data":{"result":[],"resultType":"matrix"}}`,
	`{"status":"error","errorType":"bad_data","error":"parse error"}`,
	`{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"2"]}]}}`,
	`[]`, `{`, ``,
}

// Decoding a response never panics; what it accepts, the client library's
// own types read the same: the same series, times and values.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, _, err := decode(body)
		if err != nil {
			return
		}
		var ref struct {
			Data struct {
				ResultType string          `json:"resultType"`
				Result     json.RawMessage `json:"result"`
			} `json:"data"`
		}
		// The library reads keys in any case and replaces invalid UTF-8;
		// Prometheus writes neither.
		if json.Unmarshal(body, &ref) != nil || caseFolded(body) || !utf8.Valid(body) {
			return
		}
		var want []series
		switch ref.Data.ResultType {
		case "vector":
			var v model.Vector
			if json.Unmarshal(ref.Data.Result, &v) != nil {
				return
			}
			for _, s := range v {
				if s.Histogram == nil {
					want = append(want, series{s.Metric, []model.SamplePair{{Timestamp: s.Timestamp, Value: s.Value}}})
				}
			}
		case "matrix":
			var m model.Matrix
			if json.Unmarshal(ref.Data.Result, &m) != nil {
				return
			}
			for _, s := range m {
				if len(s.Values) > 0 {
					want = append(want, series{s.Metric, s.Values})
				}
			}
		default:
			t.Fatalf("accepted a %q result", ref.Data.ResultType)
		}
		if len(got) != len(want) {
			t.Fatalf("%d series, the library reads %d", len(got), len(want))
		}
		for i := range got {
			if !got[i].metric.Equal(want[i].metric) || len(got[i].points) != len(want[i].points) {
				t.Fatalf("series %d: %v %v, the library reads %v %v", i, got[i].metric, got[i].points, want[i].metric, want[i].points)
			}
			for j, p := range got[i].points {
				q := want[i].points[j]
				a, b := float64(p.Value), float64(q.Value)
				if d := p.Timestamp - q.Timestamp; d > 1 || d < -1 || !(a == b || math.IsNaN(a) && math.IsNaN(b)) {
					t.Fatalf("series %d point %d: %v, the library reads %v", i, j, p, q)
				}
			}
		}
	})
}

// caseFolded reports a response key written in another case than
// Prometheus's, which encoding/json would match anyway.
func caseFolded(body []byte) bool {
	lower := bytes.ToLower(body)
	for _, k := range []string{"status", "data", "resulttype", "result", "metric", "value", "values", "histogram", "histograms"} {
		q := []byte(`"` + k + `"`)
		exact := `"` + map[string]string{"resulttype": "resultType"}[k]
		if exact == `"` {
			exact += k
		}
		if bytes.Count(lower, q) != bytes.Count(body, []byte(exact+`"`)) {
			return true
		}
	}
	return false
}

// A response that is not a successful vector or matrix is an error, never
// an empty answer.
func TestDecodeRefusesWhatIsNotAnAnswer(t *testing.T) {
	for _, body := range []string{
		``, `{`, `[]`, `{"status":"success"}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}`,
		`{"status":"success","data":{"resultType":"vector"}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"2"]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"2"]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"],[2]]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]}`,
	} {
		if got, _, err := decode([]byte(body)); err == nil {
			t.Errorf("%s: accepted as %v", body, got)
		}
	}
}
