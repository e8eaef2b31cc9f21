#!/usr/bin/env python3
"""nanort-bench: nanort against ONNX Runtime (and IREE where installed) on one machine, one run.

Prints, as markdown:
  * the machine: CPU model, cores, date, nanoc's and ONNX Runtime's versions;
  * the CPU's measured f32 FMA peak: a small C program (compiled here with
    `cc -O2 -march=native`) runs 16 independent accumulator chains of
    _mm512_fmadd_ps (AVX-512, where the CPU has it) and of _mm256_fmadd_ps
    (AVX2+FMA) per thread, timed with clock_gettime, on 1 and on 2 threads,
    the best of 20 short runs (on a shared machine the best is the one least
    disturbed);
    "% of peak" divides by the higher of the two at the same thread count;
  * per thread count (1 and 2): for each model the median latency of nanort
    (nanort-run's in-process timing), ONNX Runtime (CPU provider, the same
    intra-op thread count, all graph optimizations, timed around
    InferenceSession.run from Python) and IREE (llvm-cpu for the host CPU,
    iree-benchmark-module's median) where installed, nanort's speed as a
    multiple of ONNX Runtime's (ORT ms / nanort ms: above 1x nanort is
    faster, the issue's targets are 1.1x and 1.2x), nanort's GFLOP/s and % of
    peak. The two alternate, --rounds times (3) per model and thread count,
    --repeat runs each time: the ms columns are the medians of the rounds'
    medians, the speed the median of the rounds' ratios, with their range
    (the second vCPU of a shared machine comes and goes for seconds at a
    time, which a single back-to-back pair reads as a speed-up or a loss);
  * an SGEMM 1024x1024x1024 row (a MatMul of an input by a constant matrix);
  * per model, nanoc's compile time and peak memory, and nanort's load and
    session-creation time (nanort-run's startup_us line, the least over the
    runs);
  * a per-layer breakdown of one model (nanort-run --profile): the 15 slowest
    thunks with each one's GFLOP/s and % of the 1-thread peak.

FLOPs are counted from the ONNX graph after onnx.shape_inference: Conv and
ConvTranspose 2*N*Cout*Hout*Wout*(Cin/group)*kH*kW, Gemm and MatMul 2*M*N*K
(batched: times the batch); other operators count 0, so GFLOP/s is the rate of
the multiply-adds, the usual convention. A thunk's FLOPs are those of the ONNX
node it names (a fused thunk names its anchor, a Conv or a Gemm).

nanort at 2 threads needs `nanort-run --threads`; a build whose nanort-run
does not list it prints "n/a (no --threads in this build)".

IREE is optional: `.venv/bin/pip install iree-base-compiler==3.13.0 iree-base-runtime==3.13.0`
(about 400 MB; not in tools/requirements.txt) puts iree-import-onnx, iree-compile and
iree-benchmark-module on the venv's PATH; without them the column reads n/a.

    python3 tools/nanort_bench.py --nanoc build/compiler/nanoc \\
        --nanort-run build/tools/nanort-run --zoo build/tests/models/onnx \\
        [--threads 1,2] [--repeat 20] [--rounds 3] [--only NAME ...] \\
        [--breakdown resnet18] [--work DIR]

Nothing here is a timed assertion: tests/models checks correctness in CTest
(and runs this tool once on mlp_b1 as a smoke test). Exit status 1 when a
nanort run failed (its row says so), else 0.
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import shape_inference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import check_model  # noqa: E402  (inputs for exported models)
from bench_vs_ort import ort_median, sgemm  # noqa: E402  (this folder's side-by-side tool)

# The zoo models benchmarked by default, in this order (tests/models/export_models.py).
DEFAULT_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "efficientnet_b0",
                  "mlp_b1", "mlp_b32"]

# The FMA loop, built at bench time for this CPU (-march=native).
FMA_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fma_peak.c")


# ---------------------------------------------------------------------------
# The machine


def cpu_model():
    """'model name' of /proc/cpuinfo, with family/model/stepping (a VM's name is generic)."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = (x.strip() for x in line.split(":", 1))
                    info.setdefault(k, v)
    except OSError:
        pass
    name = info.get("model name", platform.processor() or platform.machine())
    if "cpu family" in info:
        name += (f" (family {info['cpu family']}, model {info.get('model', '?')}, "
                 f"stepping {info.get('stepping', '?')})")
    return name


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def measure_fma_peak(work, thread_counts, iters):
    """{width: {threads: GFLOP/s}} for the vector widths this CPU has."""
    exe = os.path.join(work, "fma_peak")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-march=native", "-pthread", FMA_SOURCE, "-o", exe], check=True)
    flags = cpu_flags()
    widths = [256] + ([512] if "avx512f" in flags else [])
    peaks = {}
    for w in widths:
        peaks[w] = {}
        for t in thread_counts:
            out = subprocess.run([exe, str(w), str(t), str(iters)], check=True, text=True,
                                 capture_output=True).stdout.strip()
            peaks[w][t] = float(out) if out != "unsupported" else None
    return peaks


def measure_tile(work, width, iters):
    """GFLOP/s of fma_peak.c's GEMM register tile (operands loaded from L1), one thread."""
    out = subprocess.run([os.path.join(work, "fma_peak"), "tile", str(width), str(iters)],
                         check=True, text=True, capture_output=True).stdout.strip()
    return float(out) if out != "unsupported" else None


def nanoc_version(nanoc):
    r = subprocess.run([nanoc, "--version"], text=True, capture_output=True)
    return " ".join(r.stdout.split()) if r.returncode == 0 else "?"


def nanort_run_has_threads(nanort_run):
    r = subprocess.run([nanort_run, "--help"], text=True, capture_output=True)
    return "--threads" in (r.stdout + r.stderr)


# ---------------------------------------------------------------------------
# FLOPs from the graph


def _dims(vi):
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    out = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        out.append(d.dim_value)
    return out


def node_flops(model):
    """{node name: FLOPs} for Conv, ConvTranspose, Gemm and MatMul nodes."""
    m = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        d = _dims(vi)
        if d is not None:
            shapes[vi.name] = d
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    flops = {}
    for i, n in enumerate(m.graph.node):
        name = n.name or f"{n.op_type}_{i}"
        f = 0
        try:
            if n.op_type == "Conv":
                out, w = shapes[n.output[0]], shapes[n.input[1]]
                f = 2 * int(np.prod(out)) * int(np.prod(w[1:]))
            elif n.op_type == "ConvTranspose":
                x, w = shapes[n.input[0]], shapes[n.input[1]]
                # Every input element meets Cout/group * kH * kW weights.
                f = 2 * int(np.prod(x)) * int(np.prod(w[1:]))
            elif n.op_type == "MatMul":
                a, out = shapes[n.input[0]], shapes[n.output[0]]
                f = 2 * int(np.prod(out)) * a[-1]
            elif n.op_type == "Gemm":
                a = shapes[n.input[0]]
                trans_a = next((x.i for x in n.attribute if x.name == "transA"), 0)
                k = a[0] if trans_a else a[1]
                f = 2 * int(np.prod(shapes[n.output[0]])) * k
        except KeyError:
            f = 0
        if f:
            flops[name] = f
    return flops


# ---------------------------------------------------------------------------
# Runners


class Nanort:
    def __init__(self, args, work, flags=()):
        """`flags`: extra nanoc flags; each set of flags compiles into its own folder."""
        self.args, self.flags = args, list(flags)
        self.work = work if not self.flags else os.path.join(
            work, "nanoc" + "".join(re.sub(r"[^A-Za-z0-9]+", "_", f) for f in self.flags))
        self.has_threads = nanort_run_has_threads(args.nanort_run)
        self.compiled = {}
        # name -> (nanoc's wall seconds, its peak resident MB)
        self.compile_cost = {}
        # (name, threads) -> the least load and session-creation microseconds
        # over the runs (nanort-run's startup_us line)
        self.startup = {}

    def compile(self, name, path):
        if name not in self.compiled:
            d = os.path.join(self.work, name)
            os.makedirs(d, exist_ok=True)
            cmd = [self.args.nanoc, path, "--name", name, "-o", d] + self.flags
            # Peak memory from GNU time's %M: a child of this process would
            # report this process's own resident set as its peak (Linux keeps
            # the forked address space's high-water mark across exec), but
            # time's child forks from time.
            gnu_time = shutil.which("time")
            peak_file = os.path.join(d, "nanoc_peak_kb")
            if gnu_time:
                cmd = [gnu_time, "-f", "%M", "-o", peak_file] + cmd
            start = time.monotonic()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            seconds = time.monotonic() - start
            if r.returncode != 0:
                raise subprocess.CalledProcessError(r.returncode, self.args.nanoc, stderr=r.stderr)
            peak_mb = None
            if gnu_time:
                with open(peak_file) as f:
                    peak_mb = int(f.read().split()[-1]) / 1024
            self.compile_cost[name] = (seconds, peak_mb)
            self.compiled[name] = os.path.join(d, name + ".so")
        return self.compiled[name]

    def command(self, name, path, feeds, threads, repeat, warmup):
        d = os.path.join(self.work, name)
        so = self.compile(name, path)
        cmd = [self.args.nanort_run, so, "--output-dir", d, "--repeat", str(repeat),
               "--warmup", str(warmup)]
        if self.has_threads:
            cmd += ["--threads", str(threads)]
        for k, v in feeds.items():
            f = os.path.join(d, check_model.run_e2e.file_safe(k) + ".npy")
            np.save(f, v)
            cmd += ["--input", f"{k}={f}"]
        return cmd

    def median(self, name, path, feeds, threads, repeat, warmup):
        """Microseconds, or None when this build cannot run `threads` threads."""
        if threads != 1 and not self.has_threads:
            return None
        out = subprocess.run(self.command(name, path, feeds, threads, repeat, warmup), check=True,
                             text=True, capture_output=True).stdout
        m = re.search(r"startup_us load=([0-9.]+) session=([0-9.]+)", out)
        if m:
            load, session = float(m.group(1)), float(m.group(2))
            best = self.startup.get((name, threads))
            self.startup[(name, threads)] = ((load, session) if best is None else
                                             (min(best[0], load), min(best[1], session)))
        return float(re.search(r"latency_us median=([0-9.]+)", out).group(1))

    def profile(self, name, path, feeds, repeat):
        cmd = self.command(name, path, feeds, 1, repeat, 2) + ["--profile"]
        out = subprocess.run(cmd, check=True, text=True, capture_output=True).stdout
        rows = []
        for line in out.splitlines():
            mt = re.match(r"thunk (\d+) us=([0-9.]+) share=([0-9.]+)% op=(\S+) node=(.*)$", line)
            if mt:
                rows.append((int(mt.group(1)), float(mt.group(2)), float(mt.group(3)), mt.group(4),
                             mt.group(5).strip()))
        total = re.search(r"profile runs=\d+ thunks=(\d+) thunk_us=([0-9.]+)", out)
        return rows, (int(total.group(1)), float(total.group(2))) if total else (len(rows), None)


class Iree:
    """iree-import-onnx + iree-compile (llvm-cpu, host CPU) + iree-benchmark-module."""

    def __init__(self, work):
        self.work = work
        bindir = os.path.dirname(sys.executable)
        path = bindir + os.pathsep + os.environ.get("PATH", "")
        self.tools = {t: shutil.which(t, path=path)
                      for t in ("iree-import-onnx", "iree-compile", "iree-benchmark-module")}
        self.available = all(self.tools.values())
        self.version = "not installed"
        if self.available:
            r = subprocess.run([self.tools["iree-compile"], "--version"], text=True,
                               capture_output=True)
            mt = re.search(r"IREE \(https://iree.dev\):?\s*\n?\s*IREE compiler version (\S+)",
                           r.stdout) or re.search(r"version (\S+)", r.stdout)
            self.version = mt.group(1) if mt else "installed"
        self.vmfb = {}

    def compile(self, name, path):
        if name not in self.vmfb:
            d = os.path.join(self.work, name, "iree")
            os.makedirs(d, exist_ok=True)
            mlir, vmfb = os.path.join(d, name + ".mlir"), os.path.join(d, name + ".vmfb")
            try:
                subprocess.run([self.tools["iree-import-onnx"], path, "-o", mlir], check=True,
                               capture_output=True, text=True)
                subprocess.run([self.tools["iree-compile"], mlir,
                                "--iree-hal-target-backends=llvm-cpu",
                                "--iree-llvmcpu-target-cpu=host", "-o", vmfb], check=True,
                               capture_output=True, text=True)
                with open(mlir) as f:
                    func = re.search(r"func\.func @([\w$.-]+)", f.read())
                self.vmfb[name] = (vmfb, func.group(1) if func else "main_graph")
            except subprocess.CalledProcessError as e:
                print(f"<!-- IREE could not compile {name}: {(e.stderr or '').strip()[-300:]} -->",
                      flush=True)
                self.vmfb[name] = None
        return self.vmfb[name]

    def median(self, name, path, feeds, threads, repeat):
        if not self.available:
            return None
        compiled = self.compile(name, path)
        if compiled is None:
            return None
        vmfb, func = compiled
        d = os.path.dirname(vmfb)
        cmd = [self.tools["iree-benchmark-module"], f"--module={vmfb}", "--device=local-task",
               f"--function={func}", f"--task_topology_max_group_count={threads}",
               f"--benchmark_repetitions={max(3, repeat)}"]
        for k, v in feeds.items():
            f = os.path.join(d, check_model.run_e2e.file_safe(k) + ".npy")
            np.save(f, v)
            cmd.append(f"--input=@{f}")
        r = subprocess.run(cmd, text=True, capture_output=True)
        mt = re.search(r"_median\s+([0-9.]+)\s*(ms|us|ns)", r.stdout)
        if r.returncode != 0 or not mt:
            print(f"<!-- IREE could not run {name}: {(r.stderr or r.stdout).strip()[-300:]} -->",
                  flush=True)
            return None
        scale = {"ms": 1e3, "us": 1.0, "ns": 1e-3}[mt.group(2)]
        return float(mt.group(1)) * scale


# ---------------------------------------------------------------------------


def fmt_ms(us):
    return "n/a" if us is None else f"{us / 1e3:.3f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nanoc", required=True)
    p.add_argument("--nanort-run", required=True)
    p.add_argument("--zoo", default="build/tests/models/onnx",
                   help="directory of exported .onnx models (tests/models/export_models.py)")
    p.add_argument("--model", action="append", default=[], help="another .onnx file to add")
    p.add_argument("--only", action="append", help="benchmark only these models (repeatable)")
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    p.add_argument("--repeat", type=int, default=20, help="timed runs per model and runtime")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3,
                   help="alternate nanort and ONNX Runtime this many times per model and "
                        "thread count, --repeat runs each time; the ratio is the median of "
                        "the rounds' ratios (a shared machine's slow drifts hit both sides)")
    p.add_argument("--sgemm", type=int, default=1024, help="SGEMM size (0: none)")
    p.add_argument("--breakdown", default="resnet18", help="model for the per-layer table")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--fma-iters", type=int, default=5000000,
                   help="iterations of the FMA peak loop (16 FMAs each), best of 20")
    p.add_argument("--tile-iters", type=int, default=20000,
                   help="passes of the L1 GEMM tile over its 128 K steps, best of 20")
    p.add_argument("--no-iree", action="store_true")
    p.add_argument("--nanoc-flag", action="append", default=[],
                   help="pass this flag to nanoc (repeatable), e.g. --nanoc-flag=--no-fuse")
    p.add_argument("--compare-nanoc-flags", default=None,
                   help="also time nanort compiled with these nanoc flags (space-separated, "
                        "e.g. '--no-fuse') in the same run, as extra columns")
    p.add_argument("--work", default=None)
    args = p.parse_args()
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="nanort-bench-"))
    os.makedirs(work, exist_ok=True)
    thread_counts = [int(t) for t in args.threads.split(",")]

    models = []
    for name in DEFAULT_MODELS:
        path = os.path.join(args.zoo, name + ".onnx")
        if os.path.exists(path):
            models.append((name, path))
        else:
            print(f"<!-- {path} missing: build the zoo (cmake --build build) -->")
    for path in args.model:
        models.append((os.path.splitext(os.path.basename(path))[0], path))
    if args.sgemm:
        path = os.path.join(work, f"sgemm{args.sgemm}.onnx")
        onnx.save(sgemm(args.sgemm), path)
        models.append((f"sgemm{args.sgemm}", path))
    if args.only:
        models = [(n, p) for n, p in models if n in args.only]

    nanort = Nanort(args, work, args.nanoc_flag)
    other = (Nanort(args, work, args.compare_nanoc_flags.split())
             if args.compare_nanoc_flags else None)
    iree = Iree(work) if not args.no_iree else None
    peaks = measure_fma_peak(work, thread_counts, args.fma_iters)
    # The best measured rate at each thread count, whichever width gave it.
    peak_of = {t: max(peaks[w][t] or 0.0 for w in peaks) for t in thread_counts}

    print("## Machine\n")
    print(f"- CPU: {cpu_model()}, {os.cpu_count()} logical CPUs "
          f"({platform.machine()}, Linux {platform.release()})")
    for w in sorted(peaks):
        print(f"- measured f32 FMA peak, {w}-bit vectors: " +
              ", ".join(f"{peaks[w][t]:.1f} GFLOP/s at {t} thread{'s' if t > 1 else ''}"
                        for t in thread_counts if peaks[w][t]))
    print("- load average (1, 5, 15 min) at the start: " +
          ", ".join(f"{x:.2f}" for x in os.getloadavg()) +
          " (other processes on the machine lower every figure, the peak included)")
    print("- % of peak below: of the higher of these figures at the same thread count")
    # The GEMM tile whose operands come from L1, against the loop of registers
    # only: on a shared host the share that loads cost moves with the other
    # tenants while the loop's rate does not (docs/BENCHMARKS.md, 2026-11-27
    # night), so a low share at either end says the % of peak below is low.
    tile_width = max(peaks)
    tile_label = {512: "12 x 32", 256: "6 x 16"}.get(tile_width, "?")

    def tile_line(when):
        rate = measure_tile(work, tile_width, args.tile_iters)
        if rate is None or not peaks[tile_width][1]:
            return
        print(f"- {when}: a {tile_label} GEMM register tile with its operands loaded from L1 "
              f"(fma_peak.c tile): {rate:.1f} GFLOP/s at 1 thread, "
              f"{100 * rate / peaks[tile_width][1]:.1f}% of the {tile_width}-bit loop's peak",
              flush=True)

    if 1 in thread_counts:
        tile_line("at the start")
    print(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"- nanoc: {nanoc_version(args.nanoc)}"
          + (f", flags {' '.join(args.nanoc_flag)}" if args.nanoc_flag else ""))
    if other:
        print(f"- nanort [{args.compare_nanoc_flags}]: the same nanoc with these flags, timed "
              "right after nanort on each model")
    print(f"- ONNX Runtime {ort.__version__} (CPUExecutionProvider, ORT_ENABLE_ALL), "
          f"onnx {onnx.__version__}, numpy {np.__version__}")
    print(f"- IREE: {iree.version if iree else 'skipped (--no-iree)'}")
    print(f"- nanort-run --threads: {'yes' if nanort.has_threads else 'no'}")
    print(f"- {args.rounds} rounds per model and thread count, each the median of "
          f"{args.repeat} runs of nanort then of ONNX Runtime (after {args.warmup} warm-up "
          "runs); ms: the median of the rounds' medians; speed vs ORT: the median of the "
          "rounds' ratios, their range beside it\n", flush=True)

    failures = 0
    feeds_of, flops_of = {}, {}
    for name, path in models:
        m = onnx.load(path)
        feeds_of[name] = check_model.make_inputs(m, 0)
        flops_of[name] = sum(node_flops(m).values())

    for threads in thread_counts:
        peak = peak_of[threads]
        print(f"## {threads} thread{'s' if threads > 1 else ''}\n")
        extra = f" [{args.compare_nanoc_flags}]" if other else ""
        print("| model | GFLOP | nanort ms | ORT ms | IREE ms | speed vs ORT | rounds' range "
              "| nanort GFLOP/s | % of peak |"
              + (f" nanort{extra} ms | speed vs ORT{extra} |" if other else ""))
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if other else ""),
              flush=True)
        for name, path in models:
            feeds, flops = feeds_of[name], flops_of[name]
            ns, os_, vs = [], [], []
            n_err = None
            for r in range(args.rounds):
                warmup = args.warmup if r == 0 else 1
                try:
                    ns.append(nanort.median(name, path, feeds, threads, args.repeat, warmup))
                except subprocess.CalledProcessError as e:
                    n_err = (e.stderr or "").strip().splitlines()[-1:] or ["failed"]
                    failures += 1
                    break
                os_.append(ort_median(path, feeds, args.repeat, threads=threads, warmup=warmup))
                if other:
                    try:
                        vs.append(other.median(name, path, feeds, threads, args.repeat, warmup))
                    except subprocess.CalledProcessError:
                        vs.append(None)
            if n_err is not None or not ns or ns[0] is None:
                n = None
                o = (float(np.median(os_)) if os_ else
                     ort_median(path, feeds, args.repeat, threads=threads, warmup=args.warmup))
            else:
                n, o = float(np.median(ns)), float(np.median(os_))
            extra_cols = ""
            if other:
                if vs and all(v for v in vs):
                    ratios_v = [ov / v for ov, v in zip(os_, vs)]
                    extra_cols = f" {fmt_ms(float(np.median(vs)))} | {np.median(ratios_v):.2f}x |"
                else:
                    extra_cols = " failed | n/a |"
                    failures += 1
            i = iree.median(name, path, feeds, threads, args.repeat) if iree else None
            if n is None:
                n_text = ("n/a (no --threads in this build)" if n_err is None
                          else f"failed: {n_err[0][:60]}")
                ratio = spread = rate = pct = "n/a"
            else:
                n_text = fmt_ms(n)
                ratios = [ov / nv for ov, nv in zip(os_, ns)]
                ratio = f"{np.median(ratios):.2f}x"
                spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
                gflops = flops / (n * 1e3)
                rate = f"{gflops:.1f}"
                pct = f"{100 * gflops / peak:.1f}%" if peak else "n/a"
            print(f"| {name} | {flops / 1e9:.3f} | {n_text} | {fmt_ms(o)} | {fmt_ms(i)} | {ratio} "
                  f"| {spread} | {rate} | {pct} |{extra_cols}", flush=True)
        print()

    if nanort.compile_cost:
        print("## Compile and start-up\n")
        print("nanoc: wall seconds and peak resident memory (GNU time's %M; n/a without "
              "/usr/bin/time) of its one compile of the model; "
              "load: `nanort_model_load_file` (the file opened, the program verified, the CPU "
              "checked); session: `nanort_session_create_with_options` (its arena allocated, "
              "and at more than one thread its pool started). µs: the least over the runs above "
              "(nanort-run's startup_us line; the load's over every thread count), the file in the "
              "page cache.\n")
        cols = thread_counts
        print("| model | nanoc s | nanoc peak MB | load µs | "
              + " | ".join(f"session µs, {t} thread{'s' if t > 1 else ''}" for t in cols)
              + " | load + session µs, 1 thread |")
        print("|---|---:|---:|---:|" + "---:|" * len(cols) + "---:|")
        for name, _ in models:
            if name not in nanort.compile_cost:
                continue
            seconds, mb = nanort.compile_cost[name]
            ups = [nanort.startup.get((name, t)) for t in cols]
            loads = [u[0] for u in ups if u]
            load = min(loads) if loads else None
            one = nanort.startup.get((name, 1))
            print(f"| {name} | {seconds:.1f} | " + (f"{mb:.0f}" if mb is not None else "n/a") + " | "
                  + (f"{load:.1f}" if load is not None else "n/a") + " | "
                  + " | ".join(f"{u[1]:.1f}" if u else "n/a" for u in ups) + " | "
                  + (f"{load + one[1]:.1f}" if one else "n/a") + " |")
        print(flush=True)

    target = dict(models).get(args.breakdown)
    if target:
        m = onnx.load(target)
        per_node = node_flops(m)
        # Each thunk's median over the rounds (each round's figure nanort-run's
        # own over its runs), ranked by it.
        per_round = [nanort.profile(args.breakdown, target, feeds_of[args.breakdown],
                                    max(3, args.repeat // 2))
                     for _ in range(max(1, args.rounds))]
        first, (count, _) = per_round[0]
        rows = []
        for thunk, _, _, op, node in first:
            us = float(np.median([next(r[1] for r in rr if r[0] == thunk)
                                  for rr, _ in per_round]))
            rows.append([thunk, us, 0.0, op, node])
        total_us = sum(r[1] for r in rows)
        # An Im2Col that conv_to_gemm put before a product (node N_im2col),
        # and the Slice of the pixels a strided 1x1 Conv reads that
        # nchwc_layout put before it (N_subsample), count toward its Conv N.
        by_node = {r[4]: r for r in rows}
        for r in list(rows):
            conv = None
            for suffix in ("_im2col", "_subsample"):
                if r[4].endswith(suffix):
                    conv = by_node.get(r[4][:-len(suffix)])
            if conv is not None:
                conv[1] += r[1]
                conv[3] = f"{r[3]} + {conv[3]}"
                rows.remove(r)
        for r in rows:
            r[2] = 100 * r[1] / total_us if total_us else 0.0
        rows.sort(key=lambda r: -r[1])
        peak = peak_of[1]
        print(f"## Per-layer breakdown: {args.breakdown}, 1 thread\n")
        print(f"nanort-run --profile, {count} thunks, {total_us:.0f} µs of thunks a run; "
              f"the {args.top} slowest (each thunk's median over {len(per_round)} rounds, an "
              "Im2Col's or a strided 1x1 Conv's Slice added to its Conv's; GFLOP: the ONNX node's multiply-adds; "
              "0 for data movement and elementwise operators).\n")
        print("| # | thunk | op | node | µs | share | GFLOP | GFLOP/s | % of peak |")
        print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
        for rank, (thunk, us, share, op, node) in enumerate(rows[:args.top], 1):
            f = per_node.get(node, 0)
            rate = f / (us * 1e3) if us > 0 else 0.0
            print(f"| {rank} | {thunk} | {op} | {node} | {us:.1f} | {share:.1f}% | {f / 1e9:.4f} "
                  f"| {rate:.1f} | {100 * rate / peak:.1f}% |")
        print()
    if 1 in thread_counts:
        tile_line("at the end")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
