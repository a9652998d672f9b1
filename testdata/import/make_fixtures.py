#!/usr/bin/env python3
"""Writes the import fixtures: small files in the shapes vLLM, guidellm and AIPerf
write (see interop/*.go for the source revisions each shape was read from). Seeded, so
that rerunning it gives the same bytes. Run from this directory: python3 make_fixtures.py
"""
import json
import os
import random

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
N = 120


def lengths(seed):
    r = random.Random(seed)
    return [r.randint(100, 400) for _ in range(N)]


def timeline(r, slow=1.0):
    """ttft (s), chunk gaps (s), output tokens of one request."""
    out = r.randint(20, 40)
    ttft = r.uniform(0.04, 0.12) * slow
    gaps = [max(0.002, r.gauss(0.020, 0.003)) * slow for _ in range(out - 1)]
    return ttft, gaps, out


def vllm(path, seed, errors=(), slow=1.0, extra=None, detailed=True):
    r = random.Random(seed)
    ins = lengths(1)
    ttfts, itls, outs, errs = [], [], [], []
    for i in range(N):
        ttft, gaps, out = timeline(r, slow)
        if i in errors:
            ttfts.append(0.0), itls.append([]), outs.append(0)
            errs.append(errors[i])
        else:
            ttfts.append(round(ttft, 6)), itls.append([round(g, 6) for g in gaps]), outs.append(out)
            errs.append("")
    done = N - len(errors)
    dur = N / 4.0 + 0.9
    res = {
        "date": "20251103-141500", "endpoint_type": "openai-chat", "backend": "openai-chat", "label": None,
        "model_id": MODEL, "tokenizer_id": MODEL, "num_prompts": N, "vllm_version": "0.11.0",
        "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": None,
        "duration": dur, "completed": done, "failed": len(errors),
        "total_input_tokens": sum(x for x, e in zip(ins, errs) if not e), "total_output_tokens": sum(outs),
        "request_throughput": done / dur, "request_goodput": None, "output_throughput": sum(outs) / dur,
        "total_token_throughput": (sum(ins) + sum(outs)) / dur,
        "input_lens": ins, "output_lens": outs, "ttfts": ttfts, "itls": itls,
        "generated_texts": ["" for _ in range(N)], "errors": errs,
        "max_output_tokens_per_s": 160.0, "max_concurrent_requests": 3,
        "mean_ttft_ms": 80.0, "median_ttft_ms": 80.0, "std_ttft_ms": 20.0, "p99_ttft_ms": 119.0,
        "mean_tpot_ms": 20.0, "median_tpot_ms": 20.0, "std_tpot_ms": 1.0, "p99_tpot_ms": 22.0,
        "mean_itl_ms": 20.0, "median_itl_ms": 20.0, "std_itl_ms": 3.0, "p99_itl_ms": 27.0,
    }
    if not detailed:
        for k in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
            del res[k]
    if extra:
        res.update(extra)
    with open(path, "w") as f:
        json.dump(res, f)


TRACE = ('Traceback (most recent call last):\n  File "endpoint_request_func.py", line 390, in '
         'async_request_openai_chat_completions\naiohttp.client_exceptions.ServerTimeoutError: Timeout on reading data from socket')


def gl_request(r, i, t0, rate, err=None, slow=1.0):
    target = t0 + i / rate
    start = target + 0.0002
    ttft, gaps, out = timeline(r, slow)
    first = start + ttft
    last = first + sum(gaps)
    end = last + 0.001
    p = 100 + (i * 37) % 300
    info = {"requested": True, "completed": err is None, "errored": err is not None, "canceled": False,
            "targeted_start_time": target, "queued_time": target - 0.5, "dequeued_time": target - 0.01,
            "scheduled_time": target - 0.005, "worker_start": target, "request_start": start,
            "request_end": end, "worker_end": end + 0.0001, "process_id": i % 2}
    req = {"type_": "generative_text_response", "request_id": f"req-{i:04d}", "request_type": "chat_completions",
           "scheduler_info": info, "prompt": "", "output": "", "prompt_tokens": p, "output_tokens": out,
           "start_time": start, "end_time": end, "first_token_time": first, "last_token_time": last,
           "request_latency": end - start, "time_to_first_token_ms": 1000 * ttft,
           "time_per_output_token_ms": 1000 * (last - first) / out,
           "inter_token_latency_ms": 1000 * (last - first) / (out - 1),
           "tokens_per_second": (p + out) / (end - start), "output_tokens_per_second": out / (end - start)}
    if err:
        req.update({"type_": "generative_text_error", "error": err, "output": None, "output_tokens": 0,
                    "first_token_time": None, "last_token_time": None})
        for k in ("time_to_first_token_ms", "time_per_output_token_ms", "inter_token_latency_ms", "output_tokens_per_second"):
            req[k] = None
    return req


def gl_benchmark(seed, idx, rate, t0, errors=(), slow=1.0, n=N):
    r = random.Random(seed)
    reqs = [gl_request(r, i, t0, rate, errors.get(i) if errors else None, slow) for i in range(n)]
    ok = [q for q in reqs if q["type_"] == "generative_text_response"]
    bad = [q for q in reqs if q["type_"] == "generative_text_error"]
    start, end = min(q["start_time"] for q in reqs), max(q["end_time"] for q in reqs)
    strategy = {"type_": "constant", "rate": rate, "initial_burst": True, "max_concurrency": None}
    return {
        "type_": "generative_benchmark", "id_": f"bench-{seed}-{idx}", "run_id": f"run-{seed}",
        "args": {"profile": {"type_": "constant", "completed_strategies": 2, "measured_rates": None,
                             "measured_concurrencies": None, "max_concurrency": None, "strategy_type": "constant",
                             "rate": [2.0, 4.0], "initial_burst": True},
                 "strategy_index": idx, "strategy": strategy, "max_number": n, "max_duration": None,
                 "warmup_number": None, "warmup_duration": None, "cooldown_number": None, "cooldown_duration": None},
        "run_stats": {"start_time": start - 1, "end_time": end, "requests_made": {"successful": len(ok), "errored": len(bad), "incomplete": 0, "total": n},
                      "queued_time_avg": 0.5, "scheduled_time_delay_avg": 0.001, "scheduled_time_sleep_avg": 0.2,
                      "worker_start_delay_avg": 0.0001, "worker_time_avg": 0.7, "worker_start_time_targeted_delay_avg": 0.0002,
                      "request_start_time_delay_avg": 0.0002, "request_start_time_targeted_delay_avg": 0.0002,
                      "request_time_delay_avg": 0.0001, "request_time_avg": 0.7},
        "worker": {"type_": "generative_requests_worker", "backend_type": "openai_http", "backend_target": "http://localhost:8000",
                   "backend_model": MODEL, "backend_info": {"max_output_tokens": 16384, "timeout": 300, "http2": True,
                                                            "text_completions_path": "/v1/completions", "chat_completions_path": "/v1/chat/completions"}},
        "request_loader": {"type_": "generative_request_loader", "data": "prompt_tokens=256,output_tokens=32",
                           "data_args": None, "processor": MODEL, "processor_args": None},
        "extras": {},
        "metrics": {},
        "start_time": start, "end_time": end, "duration": end - start,
        "request_totals": {"successful": len(ok), "incomplete": 0, "errored": len(bad), "total": n},
        "request_samples": None,
        "requests": {"successful": ok, "incomplete": [], "errored": bad},
    }


def guidellm(path, seed, errors=None, slow=1.0, later=False):
    t0 = 1762179300.0
    rep = {"benchmarks": [gl_benchmark(seed, 0, 2.0, t0, n=10), gl_benchmark(seed + 100, 1, 4.0, t0 + 40, errors or {}, slow)]}
    if later:
        rep = {"args": {"target": "http://localhost:8000", "profile": "constant", "rate": [2.0, 4.0]},
               "benchmarks": [{"type_": "generative_benchmark", "config": {}, "scheduler_state": {}, "scheduler_metrics": {},
                               "metrics": {}, "requests": {"successful": [], "incomplete": [], "errored": []}}]}
    with open(path, "w") as f:
        json.dump(rep, f)


def aiperf(dirname, seed, errors=None, slow=1.0, schema="1.3"):
    os.makedirs(dirname, exist_ok=True)
    r = random.Random(seed)
    t0 = 1762179300_000_000_000
    lines = []
    ends = []
    for i in range(N):
        start = t0 + int(i * 0.25e9)
        ttft, gaps, out = timeline(r, slow)
        p = 100 + (i * 53) % 300
        md = {"session_num": i, "x_request_id": f"00000000-0000-4000-8000-{i:012d}",
              "x_correlation_id": f"10000000-0000-4000-8000-{i:012d}", "conversation_id": f"conv-{i % 50:03d}",
              "turn_index": 0, "request_start_ns": start, "request_ack_ns": start + 1_000_000,
              "request_end_ns": None, "worker_id": f"worker_{i % 4:08x}", "record_processor_id": "record_processor_0000abcd",
              "benchmark_phase": "profiling", "was_cancelled": False, "cancellation_time_ns": None}
        if errors and i in errors:
            code, typ, msg = errors[i]
            md["request_end_ns"] = start + 30_000_000
            md["request_ack_ns"] = None
            rec = {"metadata": md, "metrics": {"error_isl": {"value": p, "unit": "tokens"}},
                   "error": {"code": code, "type": typ, "message": msg}}
        else:
            icl = [round(g * 1000, 6) for g in gaps]
            lat = ttft * 1000 + sum(icl)
            md["request_end_ns"] = start + int(round(lat * 1e6))
            rec = {"metadata": md, "metrics": {
                "input_sequence_length": {"value": p, "unit": "tokens"},
                "ttft": {"value": round(ttft * 1000, 6), "unit": "ms"},
                "request_count": {"value": 1, "unit": "requests"},
                "request_latency": {"value": lat, "unit": "ms"},
                "min_request_timestamp": {"value": start, "unit": "ns"},
                "output_token_count": {"value": out, "unit": "tokens"},
                "ttst": {"value": icl[0], "unit": "ms"},
                "inter_chunk_latency": {"value": icl, "unit": "ms"},
                "output_sequence_length": {"value": out, "unit": "tokens"},
                "max_response_timestamp": {"value": md["request_end_ns"], "unit": "ns"},
                "inter_token_latency": {"value": sum(icl) / (out - 1), "unit": "ms"},
                "output_token_throughput_per_user": {"value": 1000 * (out - 1) / sum(icl), "unit": "tokens/sec/user"}},
                "error": None}
        ends.append(md["request_end_ns"])
        lines.append(json.dumps(rec, separators=(",", ":")))
    with open(os.path.join(dirname, "profile_export.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")
    dur = (max(ends) - t0) / 1e9
    summary = {
        "schema_version": schema, "aiperf_version": "0.5.0", "benchmark_id": f"bench-{seed}",
        # AIPerf counts the requests that succeeded here, the failed ones in
        # error_request_count (as its own example artifacts do).
        "request_count": {"unit": "requests", "avg": N - len(errors or {})},
        **({"error_request_count": {"unit": "requests", "avg": len(errors)}} if errors else {}),
        "benchmark_duration": {"unit": "sec", "avg": dur},
        "input_config": {"endpoint": {"model_names": [MODEL], "type": "chat", "streaming": True, "url": "localhost:8000"},
                         "input": {"prompt": {"input_tokens": {"mean": 256, "stddev": 64}, "output_tokens": {"mean": 30}}, "random_seed": 7},
                         "loadgen": {"request_rate": 4.0, "request_count": N},
                         "cli_command": "aiperf profile -m meta-llama/Llama-3.1-8B-Instruct --url localhost:8000 --streaming --endpoint-type chat --request-rate 4 --request-count 120 --isl 256 --isl-stddev 64 --osl 30 --random-seed 7"},
        "was_cancelled": False, "error_summary": [],
        "start_time": "2025-11-03T14:15:00.000000", "end_time": "2025-11-03T14:15:16.000000",
    }
    with open(os.path.join(dirname, "profile_export_aiperf.json"), "w") as f:
        json.dump(summary, f, indent=2)


os.makedirs("vllm", exist_ok=True)
vllm("vllm/baseline.json", 11)
vllm("vllm/candidate.json", 12, errors={7: TRACE, 31: "Service Unavailable", 44: "Service Unavailable"})
vllm("vllm/regressed.json", 13, slow=1.5)
vllm("vllm/unsupported.json", 14, extra={"result_schema": 2, "request_start_times": [0.0] * N})
vllm("vllm/no-detailed.json", 15, detailed=False)
os.makedirs("guidellm", exist_ok=True)
guidellm("guidellm/baseline.json", 21)
guidellm("guidellm/candidate.json", 22, errors={5: "HTTPStatusError: Server error '503 Service Unavailable'", 40: "TimeoutException: timed out"})
guidellm("guidellm/unsupported.json", 23, later=True)
aiperf("aiperf/baseline", 31)
aiperf("aiperf/candidate", 32, errors={3: (503, "HTTPStatusError", "Service Unavailable"), 50: (499, "RequestCancellationError", "Request was cancelled after 0.000 seconds")})
aiperf("aiperf/unsupported", 33, schema="2.0")
