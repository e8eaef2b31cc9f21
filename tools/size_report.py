#!/usr/bin/env python3
"""Measures nanort's code size per target and writes docs/SIZE.md.

    python3 tools/size_report.py --build build [--out docs/SIZE.md]
                                 [--budget TARGET/OPT/MESSAGES=BYTES ...] [--work DIR]

For every target whose compiler is installed (x86-64 with g++; cortex-m4 with
arm-none-eabi-g++ and newlib-nano; aarch64 and riscv64 with Debian's
{aarch64,riscv64}-linux-gnu-g++), at -Os and at -O2, it compiles nanort's
sources the way nanort/CMakeLists.txt does (C++17, no exceptions or RTTI,
-ffunction-sections -fdata-sections, the core -ffreestanding; platform posix
on Linux targets, none on Cortex-M; no unwind tables; thunk observers and
threads and run-time control flow compiled in on posix, out on none, as
NANORT_WITH_THUNK_OBSERVER, NANORT_WITH_THREADS and NANORT_WITH_CONTROL_FLOW
default), and links
three small C programs with --gc-sections (static on Linux):

  empty   int main(void) { return 0; }
  core    calls every function of nanort.h except nanort_model_load_file and
          the profiling calls (nanort_session_set_thunk_observer,
          nanort_model_thunk_count/_info) and nanort_session_create_with_
          options (threads), which firmware does not make:
          load, session, run, accessors, status and dtype names, the system
          allocator, on a model def it cannot see, so nothing folds away
  digits  the digits MLP (nanoc --target for that CPU) loaded from a static
          pool, one inference into a static arena

once per NANORT_MESSAGES variant measured (full at -Os and -O2, short at -Os),
and reports, in bytes of text+data+bss (Berkeley `size`; .eh_frame, where the
target emits it, counts as text):
  - nanort's own: input sections of nanort's objects that the linker kept
    (from the link map), i.e. what nanort adds by itself;
  - with libc: core minus empty, i.e. nanort plus what it pulls from the C
    library (memcpy, aligned_alloc, ...);
  - the digits MLP's object (kernels, constants, program) and the whole
    digits program minus empty.

--budget (repeatable) fails (exit 1) when nanort's own size for that
row exceeds BYTES, e.g. --budget cortex-m4/Os/short=8000; a row that could
not be measured fails it too. --build names the host build: its schema/ (flatc output),
compiler/nanoc and samples/digits/data/digits_mlp.onnx are used.
"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

M4_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]


class Target:
    def __init__(self, name, prefix, nanoc_target, platform, cflags, ldflags):
        self.name = name
        self.prefix = prefix
        self.nanoc_target = nanoc_target
        self.platform = platform
        self.cflags = cflags
        self.ldflags = ldflags

    def tool(self, name):
        return self.prefix + name


TARGETS = [
    Target("x86-64", "", "x86-64-v3", "posix", [], ["-static"]),
    Target("cortex-m4", "arm-none-eabi-", "cortex-m4", "none", M4_FLAGS,
           ["--specs=nano.specs", "--specs=nosys.specs"]),
    Target("aarch64", "aarch64-linux-gnu-", "armv8-a", "posix", [], ["-static"]),
    Target("riscv64", "riscv64-linux-gnu-", "rv64gc", "posix", [], ["-static"]),
]
# (opt, messages): NANORT_MESSAGES=full at both levels, short at -Os.
VARIANTS = [("-Os", "full"), ("-O2", "full"), ("-Os", "short")]

EMPTY_C = "int main(void) { return 0; }\n"

CORE_C = r"""
#include <nanort/nanort.h>
#include <stddef.h>
/* A def the compiler cannot see through, so every path stays. */
const nanort_model_def* volatile probe_def;
static unsigned char arena[64] __attribute__((aligned(64)));
int main(void) {
  nanort_status st;
  nanort_model* model = NULL;
  nanort_session* session = NULL;
  nanort_allocator a = nanort_allocator_system();
  int r = (int)nanort_model_load(probe_def, a, &model, &st);
  nanort_tensor_info info;
  r += (int)nanort_model_input_info(model, 0, &info) + (int)nanort_model_output_info(model, 0, &info);
  r += (int)nanort_model_input_count(model) + (int)nanort_model_output_count(model);
  r += (int)nanort_model_arena_size(model) + (int)nanort_model_arena_alignment(model);
  r += (int)nanort_session_create(model, arena, sizeof arena, a, &session, &st);
  r += (int)nanort_run(session, NULL, 0, NULL, 0, &st);
  r += nanort_status_code_name(st.code)[0] + nanort_dtype_name(info.dtype)[0];
  r += (int)nanort_dtype_size(info.dtype);
  nanort_session_release(session);
  nanort_model_release(model);
  return r;
}
"""

DIGITS_C = r"""
#include <nanort/nanort.h>
#include <stddef.h>
#include <stdint.h>
#include "digits_mlp.h"
static unsigned char pool[4096] __attribute__((aligned(16)));
static size_t used;
static void* pool_alloc(void* self, size_t size, size_t alignment) {
  (void)self;
  size_t begin = (used + alignment - 1) & ~(alignment - 1);
  if (begin > sizeof pool || size > sizeof pool - begin) return NULL;
  used = begin + size;
  return pool + begin;
}
static void pool_free(void* self, void* p) { (void)self; (void)p; }
static unsigned char arena[DIGITS_MLP_ARENA_SIZE] __attribute__((aligned(DIGITS_MLP_ARENA_ALIGNMENT)));
float volatile_input[64];
int main(void) {
  nanort_allocator a = {NULL, pool_alloc, pool_free};
  nanort_model* model;
  nanort_session* session;
  nanort_status st;
  if (nanort_model_load(&digits_mlp_model, a, &model, &st) != NANORT_OK) return 1;
  if (nanort_session_create(model, arena, sizeof arena, a, &session, &st) != NANORT_OK) return 1;
  static const int64_t in_dims[] = DIGITS_MLP_INPUT0_DIMS, out_dims[] = DIGITS_MLP_OUTPUT0_DIMS;
  float probs[10];
  nanort_tensor in = {volatile_input, NANORT_F32, 2, in_dims};
  nanort_tensor out = {probs, NANORT_F32, 2, out_dims};
  if (nanort_run(session, &in, 1, &out, 1, &st) != NANORT_OK) return 1;
  int best = 0;
  for (int i = 1; i < 10; ++i) if (probs[i] > probs[best]) best = i;
  return best;
}
"""


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}\n{result.stdout}{result.stderr}")
    return result.stdout


def berkeley_size(size_tool, path):
    """text + data + bss of an ELF file (object or executable)."""
    lines = run([size_tool, str(path)]).splitlines()
    fields = lines[1].split()
    text, data, bss = int(fields[0]), int(fields[1]), int(fields[2])
    return text + data + bss


# An input section line of a GNU ld map: optional name, address, size, file.
MAP_LINE = re.compile(r"^ (\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
SKIP_OUTPUT = re.compile(r"^\.(debug|comment|note|ARM\.attributes|stab|gnu\.attributes|riscv\.attributes)")


def nanort_bytes_from_map(map_path):
    """Bytes of allocated input sections that came from nanort's objects."""
    total = 0
    in_memory_map = False
    output_section = ""
    pending_name = None
    for line in map_path.read_text(errors="replace").splitlines():
        if line.startswith("Linker script and memory map"):
            in_memory_map = True
            continue
        if not in_memory_map:
            continue
        if line and not line.startswith(" "):
            output_section = line.split()[0]
            continue
        m = MAP_LINE.match(line)
        if m is None:
            # A long input-section name sits alone on its line.
            stripped = line.strip()
            pending_name = stripped if stripped.startswith(".") and " " not in stripped else None
            continue
        name = m.group(1) or pending_name or ""
        pending_name = None
        if SKIP_OUTPUT.match(output_section) or name.startswith("*"):
            continue
        if "libnanort.a(" in m.group(4):
            total += int(m.group(3), 16)
    return total


def nanort_sources(platform):
    src = ROOT / "nanort" / "src"
    core = sorted(src.glob("*.cc"))
    plat = sorted((src / "platform").glob(f"{platform}_*.cc"))
    return core, plat


def variant_dir(work, target, opt, messages):
    return work / target.name / (opt.lstrip("-") + ("" if messages == "full" else "-" + messages))


def build_target(target, opt, messages, build_dir, work, fb_include):
    """Returns a dict of measurements, or raises RuntimeError."""
    out = variant_dir(work, target, opt, messages)
    obj_dir = out / "nanort_obj"
    obj_dir.mkdir(parents=True, exist_ok=True)
    cxx, cc = target.tool("g++"), target.tool("gcc")
    common = target.cflags + [opt, "-ffunction-sections", "-fdata-sections", "-DNDEBUG",
                              "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]
    includes = ["-I", str(ROOT / "nanort" / "include"), "-I", str(ROOT / "nanort" / "src"),
                "-isystem", str(build_dir / "schema"), "-isystem", str(fb_include)]
    core, plat = nanort_sources(target.platform)
    objects = []
    for source in core + plat:
        obj = obj_dir / (source.stem + ".o")
        flags = ["-std=c++17", "-fno-exceptions", "-fno-rtti", "-w"]
        if messages == "short":
            flags.append("-DNANORT_SHORT_MESSAGES=1")
        if target.platform == "posix":
            flags.append("-DNANORT_WITH_THUNK_OBSERVER=1")
            flags.append("-DNANORT_WITH_THREADS=1")
            flags.append("-DNANORT_WITH_CONTROL_FLOW=1")
        if source in core:
            flags.append("-ffreestanding")
        run([cxx] + common + flags + includes + ["-c", str(source), "-o", str(obj)])
        objects.append(str(obj))
    lib = out / "libnanort.a"
    lib.unlink(missing_ok=True)
    run([target.tool("ar"), "rcs", str(lib)] + objects)

    def link(name, source_text, extra_objects=(), extra_includes=()):
        c = out / f"{name}.c"
        c.write_text(source_text)
        exe = out / f"{name}.elf"
        cmd = [cxx] + common + ["-x", "c", "-std=c11", str(c), "-x", "none"]
        cmd += ["-I", str(ROOT / "nanort" / "include")] + [f"-I{d}" for d in extra_includes]
        cmd += list(extra_objects) + [str(lib)] + target.ldflags
        cmd += ["-Wl,--gc-sections", f"-Wl,-Map={out / (name + '.map')}", "-s", "-o", str(exe)]
        run(cmd)
        return exe

    size_tool = target.tool("size")
    result = {}
    empty = berkeley_size(size_tool, link("empty", EMPTY_C))
    core_exe = link("core", CORE_C)
    result["core_own"] = nanort_bytes_from_map(out / "core.map")
    result["core_with_libc"] = berkeley_size(size_tool, core_exe) - empty

    model_dir = work / target.name / "digits_mlp"
    if (model_dir / "digits_mlp.o").exists():
        model_obj = model_dir / "digits_mlp.o"
        result["model"] = berkeley_size(size_tool, model_obj)
        digits_exe = link("digits", DIGITS_C, [str(model_obj)], [str(model_dir)])
        result["digits"] = berkeley_size(size_tool, digits_exe) - empty
        result["digits_own"] = nanort_bytes_from_map(out / "digits.map")
    return result


def top_functions(target, opt, work, count=6):
    """nanort's largest kept functions at this level, for 'what dominates'."""
    m = variant_dir(work, target, opt, "full") / "core.map"
    sizes = {}
    in_memory_map = False
    pending = None
    for line in m.read_text(errors="replace").splitlines():
        if line.startswith("Linker script and memory map"):
            in_memory_map = True
            continue
        if not in_memory_map:
            continue
        mm = MAP_LINE.match(line)
        if mm is None:
            s = line.strip()
            pending = s if s.startswith(".text") and " " not in s else None
            continue
        name = mm.group(1) or pending or ""
        pending = None
        if name.startswith(".text.") and "libnanort.a(" in mm.group(4):
            sizes[name[len(".text."):]] = sizes.get(name[len(".text."):], 0) + int(mm.group(3), 16)
    names = sorted(sizes, key=sizes.get, reverse=True)[:count]
    demangled = run(["c++filt"], input="\n".join(names)).splitlines() if names else []
    short = [re.sub(r"\(.*", "", d.replace("(anonymous namespace)::", "")) for d in demangled]
    return list(zip(short, (sizes[n] for n in names)))


def fmt(value):
    return "—" if value is None else f"{value:,}"


def write_report(path, results, missing, dominates):
    lines = [
        "# Size",
        "",
        "Bytes of text + data + bss (Berkeley `size`), stripped, linked with",
        "`--gc-sections`. Regenerate with `python3 tools/size_report.py --build build`",
        "(CTest runs it as `size.report` into the build tree and fails if nanort's",
        "own x86-64 -Os size exceeds its budget). How each figure is made is in the",
        "script's doc string; in short:",
        "",
        "- **nanort own**: nanort's kept sections in a program that calls every C API",
        "  function except `nanort_model_load_file`, the profiling calls and",
        "  `nanort_session_create_with_options` (from the link map); thunk observers,",
        "  threads and run-time control flow are compiled in on Linux targets, out on",
        "  Cortex-M4 (`NANORT_WITH_THUNK_OBSERVER`'s, `NANORT_WITH_THREADS`' and",
        "  `NANORT_WITH_CONTROL_FLOW`'s defaults).",
        "- **with libc**: that program minus `int main(void){return 0;}`: nanort plus",
        "  what it pulls from the C library (glibc static on Linux targets, newlib-nano",
        "  on Cortex-M4).",
        "- **digits MLP .o**: the model as nanoc compiles it for that CPU: kernels,",
        "  19 KB of f32 weights and the program.",
        "- **digits program**: one model load + one inference from a static pool and",
        "  arena, minus the empty program.",
        "",
        "- **messages**: `NANORT_MESSAGES`. full (the default) formats messages that",
        "  name the buffer, thunk, shape or feature at fault; short keeps every check",
        "  and status code but reports only `check FILE:LINE` (the failing check's",
        "  line in nanort/src), without the message texts or the formatter.",
        "",
        "| target | opt | messages | nanort own | with libc | digits MLP .o | digits program |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for target in TARGETS:
        for opt, messages in VARIANTS:
            r = results.get((target.name, opt, messages))
            if r is None:
                lines.append(f"| {target.name} | {opt} | {messages} | "
                             f"{missing.get(target.name, 'not built')} | | | |")
                continue
            lines.append(f"| {target.name} | {opt} | {messages} | {fmt(r.get('core_own'))} | "
                         f"{fmt(r.get('core_with_libc'))} | {fmt(r.get('model'))} | "
                         f"{fmt(r.get('digits'))} |")
    lines += [
        "",
        "Anchors, as their projects publish them (not measured here): TensorFlow Lite",
        "Micro's framework about 20 KB on x86-64 and about 10 KB on Cortex-M;",
        "ExecuTorch's core runtime about 48 KB stripped.",
        "",
        "## What dominates",
        "",
        "nanort's largest functions in the core program at -Os, full messages (bytes of code):",
        "",
    ]
    for target_name, functions in dominates:
        lines.append(f"- {target_name}: " + ", ".join(f"`{n}` {s:,}" for n, s in functions))
    lines += [
        "",
        "Where nanort's own bytes go: with full messages, about 4 KB of read-only",
        "data on x86-64, mostly the messages that name the buffer, thunk, feature or",
        "shape at fault, and the small formatter that fills them in (status.cc; not",
        "vsnprintf, which would pull about 2.3 KB more of newlib into firmware). The",
        "rest is code: the program's invariants (bounds, kernel indices, byte-range",
        "definedness) are the largest part, then load, session creation, run and the",
        "CPU check. Short messages keep every check and status code but drop the",
        "texts, the formatter and the code that assembles names for them: about",
        "7 KB on x86-64 and 6 KB on Cortex-M4.",
        "",
        "What made the core small (issue #3): the program flatbuffer is checked by a",
        "table-driven walker over a one-byte-per-field description of",
        "schema/program.fbs (nanort/src/program_schema.cc, under 1 KB on Cortex-M4)",
        "instead of flatc's generated Verify functions (about 2.5 KB); it follows",
        "flatbuffers' Verifier rule for rule, and a differential test holds it to the",
        "same answers on damaged programs. Sizes and offsets that must fit in memory",
        "are checked once against SIZE_MAX, after which the runtime computes in",
        "size_t (32-bit arithmetic on 32-bit targets, and no 64-bit division from",
        "libgcc); counts the session needs are taken while verifying rather than by",
        "walking the program again; the core is freestanding, so small fixed-size",
        "copies and compares are spelled as compiler builtins to stay inline; CPU",
        "feature and status-code names are packed strings, not tables of pointers.",
        "Unwind tables are off (they were 4.4 KB on x86-64).",
        "",
        "Aims (issue #3): nanort's core under 16 KB on x86-64 and under 8 KB on",
        "Cortex-M4, with short messages, the configuration firmware ships",
        "(samples/firmware builds it so and checks its messages on the board).",
        "Cortex-M4 was 27 bytes over since format 1.2's fourteen new dtypes (f64",
        "to the float8 and sub-byte types) added their names to nanort_dtype_name,",
        "and kernel ABI 3's per-worker scratch (the verifier sizes it, the session",
        "points every kernel thunk at it) added 172 more. Format 1.4's run-time",
        "control flow (NANORT_WITH_CONTROL_FLOW, out on Cortex-M4, in on Linux)",
        "costs x86-64 about 5 KB full and 3.3 KB short (the nested verifier, the",
        "flattening and the control-aware run), which puts the short core past",
        "the 16 KB aim (13,323 without it). CTest's size.report fails when a core",
        "grows past its budget: x86-64 16,768 short and 25,856 full, Cortex-M4",
        "8,416 short.",
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=pathlib.Path, required=True,
                        help="host build folder (schema/, compiler/nanoc, the digits data)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "SIZE.md")
    parser.add_argument("--work", type=pathlib.Path, help="scratch folder (default: a temp dir)")
    parser.add_argument("--budget", action="append", default=[], metavar="TARGET/OPT/MESSAGES=BYTES",
                        help="fail if nanort's own size in that row exceeds BYTES "
                             "(e.g. cortex-m4/Os/short=8000); repeatable")
    args = parser.parse_args()

    build_dir = args.build.resolve()
    if not (build_dir / "schema" / "program_generated.h").exists():
        sys.exit(f"size_report: error: {build_dir}/schema/program_generated.h missing; "
                 "build the nanort target first")
    work = args.work.resolve() if args.work else pathlib.Path(tempfile.mkdtemp(prefix="nanort-size-"))
    # Only the flatbuffers headers: a cross compiler must not see the host's
    # other headers in /usr/include.
    fb_include = work / "flatbuffers_include"
    fb_include.mkdir(parents=True, exist_ok=True)
    link = fb_include / "flatbuffers"
    if not link.exists():
        link.symlink_to("/usr/include/flatbuffers")

    nanoc = build_dir / "compiler" / "nanoc"
    onnx = build_dir / "samples" / "digits" / "data" / "digits_mlp.onnx"
    results, missing, jobs = {}, {}, []
    for target in TARGETS:
        if shutil.which(target.tool("g++")) is None:
            missing[target.name] = f"not built: no {target.tool('g++')}"
            continue
        # The model once per target, before the jobs that link it; without
        # nanoc or the trained model the digits columns stay empty.
        model_dir = work / target.name / "digits_mlp"
        shutil.rmtree(model_dir, ignore_errors=True)
        if nanoc.exists() and onnx.exists():
            run([str(nanoc), str(onnx), "--name", "digits_mlp", "--target", target.nanoc_target,
                 "-o", str(model_dir)])
        for opt, messages in VARIANTS:
            jobs.append((target, opt, messages))
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {pool.submit(build_target, t, o, m, build_dir, work, fb_include): (t, o, m)
                   for t, o, m in jobs}
        for future, (target, opt, messages) in futures.items():
            try:
                results[(target.name, opt, messages)] = future.result()
            except RuntimeError as error:
                print(f"size_report: {target.name} {opt} {messages} failed:\n{error}",
                      file=sys.stderr)
                missing[target.name] = "build failed (see the script's output)"
    dominates = [(t.name, top_functions(t, "-Os", work)) for t in TARGETS
                 if (t.name, "-Os", "full") in results]
    write_report(args.out, results, missing, dominates)
    print(args.out.read_text())

    failed = any(t.name not in missing and (t.name, o, m) not in results for t, o, m in jobs)
    for budget in args.budget:
        m = re.fullmatch(r"([\w.-]+)/(O\w+)/(full|short)=(\d+)", budget)
        if m is None:
            print(f"size_report: error: --budget {budget!r} is not TARGET/OPT/MESSAGES=BYTES",
                  file=sys.stderr)
            failed = True
            continue
        target, opt, messages, limit = m.group(1), "-" + m.group(2), m.group(3), int(m.group(4))
        row = results.get((target, opt, messages))
        if row is None:
            print(f"size_report: error: no {target} {opt} {messages} measurement for the budget "
                  f"({missing.get(target, 'not measured')})", file=sys.stderr)
            failed = True
        elif row["core_own"] > limit:
            print(f"size_report: error: nanort's own {target} {opt} {messages} size "
                  f"{row['core_own']} bytes exceeds the budget of {limit}", file=sys.stderr)
            failed = True
        else:
            print(f"size_report: {target} {opt} {messages}: {row['core_own']} bytes, "
                  f"within the budget of {limit}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
