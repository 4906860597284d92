package prom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/valyala/fastjson"

	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// post sends a query form to an API endpoint and returns the response body
// when it is a success. Errors are the client library's (v1.Error,
// url.Error), so explain names them as it does the library's own calls. A
// server that refuses POST (403, 405, 501) is asked again with GET, as the
// library does.
func post(ctx context.Context, client api.Client, endpoint string, form url.Values) ([]byte, error) {
	u := client.URL(endpoint, nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body, err := client.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusForbidden, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		u.RawQuery = form.Encode()
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil); err != nil {
			return nil, err
		}
		if resp, body, err = client.Do(ctx, req); err != nil {
			return nil, err
		}
	}
	if code := resp.StatusCode; code/100 != 2 {
		e := &v1.Error{Type: v1.ErrBadResponse, Msg: fmt.Sprintf("bad response code %d", code), Detail: string(body)}
		switch code / 100 {
		case 4:
			e.Type, e.Msg = v1.ErrClient, fmt.Sprintf("client error: %d", code)
		case 5:
			e.Type, e.Msg = v1.ErrServer, fmt.Sprintf("server error: %d", code)
		}
		// Prometheus's own errors (400, 422, and 503 for a timeout) say
		// what went wrong in the body.
		if v, err := fastjson.ParseBytes(body); err == nil && string(v.GetStringBytes("status")) == "error" {
			if t := string(v.GetStringBytes("errorType")); t != "" {
				e.Type = v1.ErrorType(t)
			}
			if m := string(v.GetStringBytes("error")); m != "" {
				e.Msg, e.Detail = m, ""
			}
		}
		return nil, e
	}
	return body, nil
}

// series is one result series of a query response.
type series struct {
	metric model.Metric
	points []model.SamplePair
}

// decode reads a query response body, streaming: its result series and
// the server's warnings. A body that is not a successful vector or matrix
// response is an error; a sample value that is not a number is NaN, as
// Prometheus writes it.
func decode(body []byte) ([]series, []string, error) {
	it := jsoniter.ParseBytes(jsoniter.ConfigDefault, body)
	bad := func(msg string) error { return &v1.Error{Type: v1.ErrBadResponse, Msg: msg} }
	var status, kind string
	var warns []string
	var out []series
	seenResult := false
	if it.WhatIsNext() != jsoniter.ObjectValue {
		return nil, nil, bad("response is not a JSON object")
	}
	for field := it.ReadObject(); field != "" && it.Error == nil; field = it.ReadObject() {
		switch field {
		case "status":
			status = it.ReadString()
		case "warnings":
			if it.WhatIsNext() != jsoniter.ArrayValue {
				it.Skip()
				continue
			}
			for it.ReadArray() {
				warns = append(warns, it.ReadString())
			}
		case "data":
			if it.WhatIsNext() != jsoniter.ObjectValue {
				return nil, warns, bad("response data is not an object")
			}
			for f := it.ReadObject(); f != "" && it.Error == nil; f = it.ReadObject() {
				switch f {
				case "resultType":
					kind = it.ReadString()
				case "result":
					seenResult = true
					var err error
					if out, err = results(it); err != nil {
						return nil, warns, err
					}
				default:
					it.Skip()
				}
			}
		default:
			it.Skip()
		}
	}
	switch {
	case it.Error != nil && !errors.Is(it.Error, io.EOF):
		return nil, warns, bad("response is not valid JSON: " + it.Error.Error())
	case status != "success":
		return nil, warns, bad(fmt.Sprintf("response status %q", status))
	case kind != "vector" && kind != "matrix":
		return nil, warns, bad(fmt.Sprintf("unexpected %q result", kind))
	case !seenResult:
		return nil, warns, bad("response has no result list")
	}
	return out, warns, nil
}

// results reads the result list: each series' labels and its sample
// ("value", of a vector) or samples ("values", of a matrix).
func results(it *jsoniter.Iterator) ([]series, error) {
	bad := func(msg string) error { return &v1.Error{Type: v1.ErrBadResponse, Msg: msg} }
	if it.WhatIsNext() != jsoniter.ArrayValue {
		return nil, bad("response result is not a list")
	}
	var out []series
	for it.ReadArray() {
		if it.WhatIsNext() != jsoniter.ObjectValue {
			return nil, bad("a result is not an object")
		}
		var s series
		hasMetric, hasSamples := false, false
		for f := it.ReadObject(); f != "" && it.Error == nil; f = it.ReadObject() {
			switch f {
			case "metric":
				hasMetric = true
				if it.WhatIsNext() != jsoniter.ObjectValue {
					return nil, bad("a result's metric is not an object")
				}
				s.metric = model.Metric{}
				for k := it.ReadObject(); k != "" && it.Error == nil; k = it.ReadObject() {
					if it.WhatIsNext() != jsoniter.StringValue {
						return nil, bad("a label value is not a string")
					}
					s.metric[model.LabelName(k)] = model.LabelValue(it.ReadString())
				}
			case "value":
				hasSamples = true
				p, err := pair(it)
				if err != nil {
					return nil, err
				}
				s.points = []model.SamplePair{p}
			case "values":
				hasSamples = true
				if it.WhatIsNext() != jsoniter.ArrayValue {
					return nil, bad("a result's values are not a list")
				}
				for it.ReadArray() {
					p, err := pair(it)
					if err != nil {
						return nil, err
					}
					s.points = append(s.points, p)
				}
			case "histogram", "histograms":
				// A native histogram has no float samples: nothing to read.
				hasSamples = true
				it.Skip()
			default:
				it.Skip()
			}
		}
		if it.Error != nil {
			break
		}
		if !hasMetric || !hasSamples {
			return nil, bad("a result lacks its metric or its samples")
		}
		if len(s.points) > 0 {
			out = append(out, s)
		}
	}
	if it.Error != nil && !errors.Is(it.Error, io.EOF) {
		return nil, bad("response is not valid JSON: " + it.Error.Error())
	}
	return out, nil
}

// pair reads [timestamp, "value"].
func pair(it *jsoniter.Iterator) (model.SamplePair, error) {
	bad := &v1.Error{Type: v1.ErrBadResponse, Msg: "a sample is not [time, \"value\"]"}
	if it.WhatIsNext() != jsoniter.ArrayValue || !it.ReadArray() || it.WhatIsNext() != jsoniter.NumberValue {
		return model.SamplePair{}, bad
	}
	ts := it.ReadFloat64()
	if !it.ReadArray() || it.WhatIsNext() != jsoniter.StringValue {
		return model.SamplePair{}, bad
	}
	sv := it.ReadString()
	if it.ReadArray() || it.Error != nil || math.IsNaN(ts) || math.IsInf(ts, 0) {
		return model.SamplePair{}, bad
	}
	x, err := strconv.ParseFloat(sv, 64)
	if err != nil {
		x = math.NaN()
	}
	return model.SamplePair{Timestamp: model.Time(math.Round(ts * 1000)), Value: model.SampleValue(x)}, nil
}

// labels is a series' label set without the metric name.
func labels(m model.Metric) window.Labels {
	l := make(window.Labels, len(m))
	for k, v := range m {
		if k == model.MetricNameLabel {
			continue
		}
		l[string(k)] = string(v)
	}
	return l
}
