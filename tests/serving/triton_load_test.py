#!/usr/bin/env python3
"""Load test of libtriton_nanort.so behind a real Triton Inference Server.

Compiles each model with nanoc, lays out a model repository with three
configurations of it (1 instance, 2 instances, 1 instance with dynamic
batching), starts tritonserver (nvidia-pytriton's binary, CPU only) bound to
127.0.0.1 on free ports, waits for it, then per configuration runs CLIENTS
threads x REQUESTS batch-1 requests with tritonclient (HTTP, a per-request
timeout) and checks every output bitwise against nanort's own (nanort-run on
the same input), 0 errors allowed. Reports p50/p99 latency and throughput,
checks the server's statistics (every request counted; batches formed under
dynamic batching and only there) and that a model whose symbol nanort cannot
find fails to load with nanort's message. Stops the server by its PID.

  triton_load_test.py --nanoc build/compiler/nanoc --nanort-run build/tools/nanort-run
      --backend-dir build/serving/triton/backends --work DIR
      --model digits=build/samples/digits/data/digits_mlp.onnx:200
      --model squeezenet=build/tests/models/onnx/squeezenet1_1.onnx:25
"""

import argparse
import importlib.util
import json
import os
import pathlib
import platform
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np

MAX_BATCH = 8
POOL = 8  # distinct random inputs per model

NP_TO_TRITON = {
    np.dtype(np.float32): ("FP32", "TYPE_FP32"),
    np.dtype(np.float16): ("FP16", "TYPE_FP16"),
    np.dtype(np.float64): ("FP64", "TYPE_FP64"),
    np.dtype(np.int8): ("INT8", "TYPE_INT8"),
    np.dtype(np.uint8): ("UINT8", "TYPE_UINT8"),
    np.dtype(np.int32): ("INT32", "TYPE_INT32"),
    np.dtype(np.int64): ("INT64", "TYPE_INT64"),
    np.dtype(np.bool_): ("BOOL", "TYPE_BOOL"),
}
ONNX_TO_NP = {1: np.float32, 10: np.float16, 11: np.float64, 3: np.int8, 2: np.uint8,
              6: np.int32, 7: np.int64, 9: np.bool_}


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def find_tritonserver(explicit):
    if explicit:
        return pathlib.Path(explicit)
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        fail("no tritonserver: the nvidia-pytriton package is not installed in "
             f"{sys.executable} (tools/setup.sh installs it), and --tritonserver was not given")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "tritonserver/bin/tritonserver"


def onnx_io(path):
    import onnx
    m = onnx.load(str(path), load_external_data=False)
    init = {i.name for i in m.graph.initializer}

    def desc(vi):
        t = vi.type.tensor_type
        return vi.name, np.dtype(ONNX_TO_NP[t.elem_type]), [d.dim_value for d in t.shape.dim]

    return ([desc(i) for i in m.graph.input if i.name not in init],
            [desc(o) for o in m.graph.output])


def config_pbtxt(name, symbol, inputs, outputs, instances, dynamic):
    def tensors(ts):
        return ",\n".join(
            f'  {{ name: "{n}" data_type: {NP_TO_TRITON[dt][1]} dims: [ {", ".join(map(str, dims[1:]))} ] }}'
            for n, dt, dims in ts)
    text = (f'name: "{name}"\nbackend: "nanort"\nmax_batch_size: {MAX_BATCH}\n'
            f"input [\n{tensors(inputs)}\n]\noutput [\n{tensors(outputs)}\n]\n"
            f"instance_group [ {{ count: {instances} kind: KIND_CPU }} ]\n")
    if dynamic:
        text += "dynamic_batching { max_queue_delay_microseconds: 500 }\n"
    text += f'parameters {{ key: "nanort_model_name" value {{ string_value: "{symbol}" }} }}\n'
    return text


CONFIGS = [("i1", 1, False), ("i2", 2, False), ("db", 1, True)]


def prepare(args, work, repo):
    """Compiles the models, writes the repository; returns per model its
    inputs, outputs, pool of inputs and nanort's outputs for them."""
    models = []
    for spec in args.model:
        label, rest = spec.split("=", 1)
        onnx_path, requests = rest.rsplit(":", 1)
        onnx_path = pathlib.Path(onnx_path)
        if not onnx_path.exists():
            fail(f"{onnx_path} is missing (built by the samples / nanort_model_zoo targets)")
        inputs, outputs = onnx_io(onnx_path)
        for n, _, dims in inputs + outputs:
            if not dims or dims[0] != 1:
                fail(f"{onnx_path}: {n} has shape {dims}; the test serves batch-1 programs")
        out = work / "compiled" / label
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run([args.nanoc, str(onnx_path), "--name", label, "-o", str(out),
                        "--target", args.target], check=True, stdout=subprocess.DEVNULL)
        for cfg, instances, dynamic in CONFIGS:
            d = repo / f"{label}_{cfg}"
            (d / "1").mkdir(parents=True, exist_ok=True)
            shutil.copy(out / f"{label}.so", d / "1" / "model.so")
            (d / "config.pbtxt").write_text(
                config_pbtxt(f"{label}_{cfg}", label, inputs, outputs, instances, dynamic))
        # nanort's own outputs for the pool of inputs.
        rng = np.random.default_rng(1234)
        pool = []
        for k in range(POOL):
            feeds = {}
            cmd = [args.nanort_run, str(out / f"{label}.so"), "--repeat", "0"]
            for n, dt, dims in inputs:
                x = (rng.random(dims) * 2 - 1).astype(dt) if dt.kind == "f" else \
                    rng.integers(0, 10, dims).astype(dt)
                feeds[n] = x
                f = work / "pool" / label / f"{k}_{n}.npy"
                f.parent.mkdir(parents=True, exist_ok=True)
                np.save(f, x)
                cmd += ["--input", f"{n}={f}"]
            odir = work / "pool" / label / f"out{k}"
            cmd += ["--output-dir", str(odir)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            expect = {n: np.load(odir / f"{''.join(c if c.isalnum() or c in '_.-' else '_' for c in n)}.npy")
                      for n, _, _ in outputs}
            pool.append((feeds, expect))
        models.append(dict(label=label, inputs=inputs, outputs=outputs, pool=pool,
                           requests=int(requests)))
    # A model nanort cannot load: its error must reach Triton.
    bad = repo / "broken"
    (bad / "1").mkdir(parents=True, exist_ok=True)
    first = models[0]
    shutil.copy(work / "compiled" / first["label"] / f"{first['label']}.so", bad / "1" / "model.so")
    (bad / "config.pbtxt").write_text(
        config_pbtxt("broken", "no_such_model", first["inputs"], first["outputs"], 1, False))
    return models


def load(url, model_name, m, clients, requests, timeout):
    import tritonclient.http as httpclient
    latencies = []
    errors = []
    lock = threading.Lock()

    def client(cid):
        c = httpclient.InferenceServerClient(url, connection_timeout=timeout, network_timeout=timeout)
        mine = []
        try:
            for r in range(requests):
                feeds, expect = m["pool"][(cid + r) % len(m["pool"])]
                ins = []
                for n, dt, dims in m["inputs"]:
                    i = httpclient.InferInput(n, dims, NP_TO_TRITON[dt][0])
                    i.set_data_from_numpy(feeds[n], binary_data=True)
                    ins.append(i)
                outs = [httpclient.InferRequestedOutput(n, binary_data=True)
                        for n, _, _ in m["outputs"]]
                t0 = time.perf_counter()
                try:
                    res = c.infer(model_name, ins, outputs=outs, timeout=int(timeout * 1e6))
                except Exception as e:  # noqa: BLE001 -- every failure is counted
                    with lock:
                        errors.append(f"{model_name} client {cid} request {r}: {e}")
                    continue
                mine.append(time.perf_counter() - t0)
                for n, _, _ in m["outputs"]:
                    got = res.as_numpy(n)
                    if got is None or got.shape != expect[n].shape or \
                            not np.array_equal(got, expect[n]):
                        with lock:
                            errors.append(f"{model_name} client {cid} request {r}: output {n} "
                                          "differs from nanort's")
        finally:
            c.close()
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return latencies, errors, wall


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nanoc", required=True)
    ap.add_argument("--nanort-run", required=True)
    ap.add_argument("--backend-dir", required=True,
                    help="--backend-directory: holds nanort/libtriton_nanort.so")
    ap.add_argument("--tritonserver", help="default: nvidia-pytriton's, from this Python")
    ap.add_argument("--model", action="append", required=True, metavar="LABEL=ONNX:REQUESTS")
    ap.add_argument("--work", required=True)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    ap.add_argument("--start-timeout", type=float, default=60.0)
    ap.add_argument("--target", default="x86-64-v2")
    args = ap.parse_args()

    work = pathlib.Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    repo = work / "repository"
    repo.mkdir(parents=True)
    backend = pathlib.Path(args.backend_dir) / "nanort" / "libtriton_nanort.so"
    if not backend.exists():
        fail(f"{backend} is missing (cmake --build build --target triton_nanort)")
    server_bin = find_tritonserver(args.tritonserver)
    if not server_bin.exists():
        fail(f"{server_bin} is missing")
    models = prepare(args, work, repo)

    http_port, grpc_port, metrics_port = free_ports(3)
    cmd = [str(server_bin), "--model-repository", str(repo), "--backend-directory",
           str(pathlib.Path(args.backend_dir).resolve()),
           "--http-address", "127.0.0.1", "--http-port", str(http_port),
           "--grpc-address", "127.0.0.1", "--grpc-port", str(grpc_port),
           "--metrics-address", "127.0.0.1", "--metrics-port", str(metrics_port),
           "--allow-gpu-metrics", "false", "--exit-on-error", "false",
           "--strict-readiness", "false"]
    log_path = work / "tritonserver.log"
    print("$", " ".join(cmd), flush=True)
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{http_port}"
    failed = False
    try:
        deadline = time.monotonic() + args.start_timeout
        names = [f"{m['label']}_{c}" for m in models for c, _, _ in CONFIGS]
        while True:
            if proc.poll() is not None:
                fail(f"tritonserver exited with {proc.returncode} before it was ready:\n"
                     + log_path.read_text()[-4000:])
            try:
                urllib.request.urlopen(f"{base}/v2/health/ready", timeout=2)
                if all(urllib.request.urlopen(f"{base}/v2/models/{n}/ready", timeout=2).status == 200
                       for n in names):
                    break
            except Exception:  # noqa: BLE001 -- not up yet
                pass
            if time.monotonic() > deadline:
                fail(f"tritonserver not ready after {args.start_timeout}s:\n"
                     + log_path.read_text()[-4000:])
            time.sleep(0.25)
        print(f"tritonserver ready on 127.0.0.1:{http_port} (pid {proc.pid})", flush=True)

        # The broken model: not ready, and the reason is nanort's message.
        index = json.loads(urllib.request.urlopen(
            urllib.request.Request(f"{base}/v2/repository/index", data=b"{}", method="POST"),
            timeout=10).read())
        broken = [e for e in index if e.get("name") == "broken"]
        reason = broken[0].get("reason", "") if broken else ""
        print(f"broken model: state={broken[0].get('state') if broken else None} reason={reason!r}")
        if not broken or broken[0].get("state") == "READY" or "nanort: NOT_FOUND" not in reason:
            print("FAIL: the broken model's load error does not carry nanort's message")
            failed = True

        rows = []
        all_errors = []
        for m in models:
            for cfg, instances, dynamic in CONFIGS:
                name = f"{m['label']}_{cfg}"
                # One untimed request warms the instance up.
                lat, errs, _ = load(f"127.0.0.1:{http_port}", name, m, 1, 1, args.timeout)
                all_errors += errs
                lat, errs, wall = load(f"127.0.0.1:{http_port}", name, m, args.clients,
                                       m["requests"], args.timeout)
                all_errors += errs
                total = args.clients * m["requests"]
                # The backend reports a request's statistics just after its
                # response is sent: wait a little for the last ones.
                stats_deadline = time.monotonic() + 10
                while True:
                    stats = get_json(f"{base}/v2/models/{name}/stats")["model_stats"][0]
                    inf, execs = int(stats["inference_count"]), int(stats["execution_count"])
                    if inf >= total + 1 or time.monotonic() > stats_deadline:
                        break
                    time.sleep(0.05)
                lat_ms = np.array(lat) * 1e3 if lat else np.array([float("nan")])
                rows.append((name, instances, "yes" if dynamic else "no", total, len(errs),
                             np.percentile(lat_ms, 50), np.percentile(lat_ms, 99),
                             len(lat) / wall, inf, execs))
                if inf != total + 1:
                    print(f"FAIL: {name}: inference_count {inf}, sent {total + 1}")
                    failed = True
                if dynamic and not execs < inf:
                    print(f"FAIL: {name}: no batch formed (execution_count {execs}, "
                          f"inference_count {inf})")
                    failed = True
                if not dynamic and execs != inf:
                    print(f"FAIL: {name}: execution_count {execs} != inference_count {inf} "
                          "without dynamic batching")
                    failed = True

        cpu = platform.processor() or ""
        try:
            cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                       if line.startswith("model name"))
        except (OSError, StopIteration):
            pass
        print(f"\nCPU: {cpu}, {os.cpu_count()} logical cores; {args.clients} clients, "
              "batch-1 requests over HTTP\n")
        head = ("model", "instances", "dyn.batch", "requests", "errors", "p50 ms", "p99 ms",
                "req/s", "inferences", "executions")
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.2f} | {r[6]:.2f} | "
                  f"{r[7]:.0f} | {r[8]} | {r[9]} |")
        if all_errors:
            print(f"\nFAIL: {len(all_errors)} errors, the first: ")
            for e in all_errors[:10]:
                print("  " + e)
            failed = True
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
    if failed:
        print(f"(server log: {log_path})")
        sys.exit(1)
    print("\nOK: every output equals nanort's, 0 errors")


if __name__ == "__main__":
    main()
