#!/bin/sh
# Records probes of llm-d-inference-sim (../shared/reference/peer-simulator.md
# says how to build it; it is not reachable from CI) for docs/probe.md.
# Each configuration's simulator flags are in configs.yaml; run from the
# repository's root with the simulator's binary as $PEERSIM:
#   PEERSIM=/path/to/llm-d-inference-sim sh probe/testdata/peer/record.sh
set -eu
out=probe/testdata/peer
go build -o /tmp/llmdoctor-record ./cmd/llmdoctor
port=18123
record() {
	name=$1; shift
	sim_flags=$1; shift
	# shellcheck disable=SC2086
	"$PEERSIM" --model peer-model --force-dummy-tokenizer --port $port --max-model-len 32768 $sim_flags >/dev/null 2>&1 &
	pid=$!
	sleep 2
	/tmp/llmdoctor-record probe --target http://127.0.0.1:$port --keep-requests --seed 7 --format json "$@" >"$out/$name.json"
	kill $pid
	wait $pid 2>/dev/null || true
	gzip -9 -f "$out/$name.json"
}
record per-token-8 "--max-num-seqs 8 --latency-calculator per-token --prefill-overhead 20ms --prefill-time-per-token 200us --prefill-time-std-dev 5ms --inter-token-latency 15ms --inter-token-latency-std-dev 2ms" \
	--slo ttft_p99=300ms --max-concurrency 16
record per-token-4 "--max-num-seqs 4 --latency-calculator per-token --prefill-overhead 50ms --prefill-time-per-token 500us --prefill-time-std-dev 10ms --inter-token-latency 30ms --inter-token-latency-std-dev 3ms" \
	--slo ttft_p99=800ms --output-tokens 64 --max-concurrency 16
