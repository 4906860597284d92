#!/usr/bin/env python3
"""The plain way to read request latencies: what llmdoctor's readers are timed against.

    python3 bench/baseline/requests.py requests.jsonl  # per-request JSONL (docs/requests.md)
    python3 bench/baseline/requests.py run.json        # vllm bench serve --save-result --save-detailed

Prints the number of timed requests and TTFT / end-to-end mean, p50, p99 in
seconds (linear interpolation, as numpy and vllm bench serve compute them), so
a user can check that both tools read the same requests. Standard library only,
written the way one would write it, not tuned. Failed requests (error set) are
counted, not timed. In bench JSON the end-to-end time of a request is its TTFT
plus its inter-token gaps, as vllm bench serve keeps no per-request e2e.
"""
import json
import sys


def pct(s, q):
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def show(name, xs):
    xs.sort()
    if not xs:
        print(f"{name}: none")
        return
    print(f"{name}: n={len(xs)} mean={sum(xs) / len(xs):.6f} p50={pct(xs, 0.5):.6f} p99={pct(xs, 0.99):.6f}")


def read_jsonl(path):
    ttft, e2e, failed = [], [], 0
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # blank or broken line
            if r.get("error"):
                failed += 1
                continue
            t = r.get("ttft")
            if t is None and r.get("ttft_ms") is not None:
                t = r["ttft_ms"] / 1000
            e = r.get("e2e")
            if e is None and r.get("e2e_ms") is not None:
                e = r["e2e_ms"] / 1000
            if t is not None:
                ttft.append(t)
            if e is not None:
                e2e.append(e)
    return ttft, e2e, failed


def read_bench(path):
    with open(path) as f:
        text = f.read()
    # --append-result writes one run per line: the last one counts.
    try:
        d = json.loads(text)
    except json.JSONDecodeError:
        d = json.loads(text.strip().splitlines()[-1])
    ttfts = d.get("ttfts") or []
    itls = d.get("itls") or [[] for _ in ttfts]
    errors = d.get("errors") or ["" for _ in ttfts]
    ttft, e2e, failed = [], [], 0
    for t, gaps, err in zip(ttfts, itls, errors):
        if err:
            failed += 1
            continue
        ttft.append(t)
        e2e.append(t + sum(gaps))
    return ttft, e2e, failed


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: requests.py FILE.jsonl|FILE.json")
    path = sys.argv[1]
    with open(path) as f:
        first = f.readline()
    # A bench result is one (often indented) object, or one run per line;
    # a request file has a request per line.
    if '"ttfts"' in first or '"completed"' in first or first.strip() == "{":
        ttft, e2e, failed = read_bench(path)
    else:
        ttft, e2e, failed = read_jsonl(path)
    print(f"failed: {failed}")
    show("ttft", ttft)
    show("e2e", e2e)


if __name__ == "__main__":
    main()
