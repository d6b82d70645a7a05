#!/usr/bin/python3
"""The schedulers side by side, and the seed papers' comparisons beside ours.

One command, three tables (bench/README.md, "Schedulers side by side"):

A. Measured, on this machine's real devices.  Per model, `hetsched profile`
   fills one profile database (in the work directory, or --db) for the two
   one-core devices (--devices, default cpu:0,cpu:1) and for the one device
   on both cores (cpu:0-1, the union baseline `compare` adds), then
   `hetsched compare MODEL --devices ... --measure -n ROUNDS -w WARMUPS`
   plans with every scheduler, predicts every plan with one cost model, and
   runs every plan and every single-device baseline in interleaved rounds
   (round k runs each plan once, so a noisy moment hits all plans alike).
   Reported: the prediction, the median of the rounds (p50) with the min..max
   of the rounds, and the speed-up over the best single device, measured
   against measured.
B. Simulated, on the platform files (platforms/*.json).  The same `compare`
   without --measure: every plan is predicted by the simulator from the
   platform's roofline models; nothing runs.  Reported: the predicted
   makespan, its ratio to compare's lower bound and the speed-up over the best
   single device (predicted against predicted); per platform the geometric
   mean over the models of auto's ratio to the lower bound (target: <= 1.25)
   and whether auto is ever predicted slower than another scheduler or
   single device (a bug if so).
C. The seed papers' comparisons (DUET, PartitionTuner, IOS, Opara, Nimble),
   computed from B, each beside the figure the paper published and what that
   figure measured (quoted from the papers and their READMEs).  Every row says
   whether ours is measured or simulated; the papers' figures are measured
   on real GPUs/NPUs and are not like-for-like with simulated ones.

Emulated runs (--measure on a platform file) are not used: the emulator runs
reference kernels on the host and holds each launch to its modelled
duration, so on a small host a modelled GPU's launches overrun and the run
times the host, not the model.

Results: OUT.csv (one row per model, platform and scheduler or baseline; its
first line describes the machine and the run) and OUT.md (the three tables,
with the same header).  The hetsched binary and its libraries are copied into
the work directory first, so a rebuild during the run cannot mix versions.
"""
import argparse
import csv
import datetime
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# zoo models by short name; NAME:KEY=VALUE:... sets zoo parameters.
ALIASES = {
    # BERT-Small's sizes (Turc et al., 2019: L=4, H=512, A=8), sequence 128.
    "bert-small": "bert:layers=4:hidden=512:heads=8",
}
MEASURED_MODELS = "googlenet,inception_v3,resnet50"
MEASURED_MODELS_QUICK = "googlenet,inception_v3"
SIM_MODELS = "inception_v3,nasnet,randwire,bert,googlenet"
PLATFORMS = "desktop-gpu,phone-soc,cpu-dsa"
AUTO_TARGET = 1.25  # auto's geometric-mean ratio to the lower bound, per platform

# ---------------------------------------------------------------- the papers' figures
#
# Quoted from the papers and their repositories' READMEs. Each comparison:
# which platform, the scheduler and the baseline (a device's sequential plan,
# "best" = the best single device, or another scheduler), the published
# figure per model where the paper gives one, the paper's overall figure, and
# what the paper measured.
SEED_COMPARISONS = [
    {
        "seed": "DUET", "title": "duet vs GPU alone", "platform": "desktop-gpu",
        "scheduler": "duet", "baseline": "device:emu:gpu", "per_model": {},
        "published": "1.5-2.3x over the GPU alone",
        "what": "DUET (IPDPS'21, abstract only): measured, coupled CPU-GPU, vs the state-of-the-art DL compiler "
                "on the GPU alone; models not named",
    },
    {
        "seed": "DUET", "title": "duet vs CPU alone", "platform": "desktop-gpu",
        "scheduler": "duet", "baseline": "device:emu:cpu", "per_model": {},
        "published": "1.3-6.4x over the CPU alone",
        "what": "DUET (IPDPS'21, abstract only): measured, vs the DL compiler on the CPU alone",
    },
    {
        "seed": "PartitionTuner", "title": "partition-tuner vs best single device", "platform": "phone-soc",
        "scheduler": "partition-tuner", "baseline": "best", "per_model": {},
        "published": "no figure quoted",
        "what": "PartitionTuner / NEST-C (ETRI J. 2023): measured, Cortex-A53 + EVTA NPUs (FPGA); "
                "seven DNNs, not listed",
    },
    {
        "seed": "PartitionTuner", "title": "type-based vs best single device", "platform": "phone-soc",
        "scheduler": "type-based", "baseline": "best", "per_model": {},
        "published": "no figure quoted",
        "what": "the static type-based placement PartitionTuner compares with (Conv on the NPU, rest on the CPU)",
    },
    {
        "seed": "PartitionTuner", "title": "partition-tuner vs type-based", "platform": "phone-soc",
        "scheduler": "partition-tuner", "baseline": "scheduler:type-based", "per_model": {},
        "published": "PartitionTuner beats static type-based placement (no figure quoted)",
        "what": "PartitionTuner (abstract): measured on the same Cortex-A53 + EVTA platform",
    },
    {
        "seed": "IOS", "title": "ios vs sequential on the GPU", "platform": "desktop-gpu",
        "scheduler": "ios", "baseline": "device:emu:gpu",
        "per_model": {"inception_v3": "1.62x", "randwire": "1.41x", "nasnet": "1.43x", "squeezenet1_0": "1.18x"},
        "published": "Inception-v3 1.62x (6.51 -> 4.03 ms), RandWire 1.41x, NasNet 1.43x, SqueezeNet 1.18x",
        "what": "IOS (MLSys'21 README): measured, V100, batch 1, cuDNN 7.6.5, one stream vs up to 8 streams "
                "per stage",
    },
    {
        "seed": "Opara", "title": "opara vs sequential on the GPU", "platform": "desktop-gpu",
        "scheduler": "opara", "baseline": "device:emu:gpu",
        "per_model": {"inception_v3": "1.41x", "googlenet": "1.68x (README)", "bert": "1.08-4.06x vs PyTorch / CUDA Graph"},
        "published": "up to 1.68x over CUDA Graph; Inception-v3 1.41x (2080S, bs1); GoogLeNet README example "
                     "CUDA Graph 1.87 ms, Opara 1.11 ms; BERT 1.08-4.06x vs PyTorch/CUDA Graph",
        "what": "Opara (TC 2025): measured, RTX 2080 SUPER (Inception-v3, GoogLeNet) and A100 (NASNet, BERT), "
                "batch 1, vs the sequential CUDA Graph",
    },
    {
        "seed": "Nimble", "title": "nimble vs sequential on the GPU", "platform": "desktop-gpu",
        "scheduler": "nimble", "baseline": "device:emu:gpu", "per_model": {},
        "published": "no like-for-like figure (up to 22.34x vs PyTorch, 2.81x vs TensorRT)",
        "what": "Nimble (NeurIPS'20, abstract): measured, V100; its figures include CUDA-graph capture, "
                "not multi-stream alone",
    },
    {
        "seed": "Opara", "title": "opara vs nimble", "platform": "desktop-gpu",
        "scheduler": "opara", "baseline": "scheduler:nimble",
        "per_model": {"inception_v3": "1.15x (A100)", "bert": "about 1.0x"},
        "published": "up to 1.29x over Nimble; Inception-v3 1.15x (A100); BERT about equal",
        "what": "Opara (TC 2025): measured, 2080S and A100, batch 1",
    },
]


# ---------------------------------------------------------------- running hetsched

def snapshot_hetsched(path, workdir):
    """Copy the binary and the shared libraries beside it into workdir/bin;
    the copy finds its libraries through LD_LIBRARY_PATH, which precedes
    RUNPATH."""
    bindir = os.path.join(workdir, "bin")
    os.makedirs(bindir)
    src = os.path.dirname(os.path.abspath(path))
    for name in os.listdir(src):
        if re.match(r"lib.*\.so(\.[0-9.]+)?$", name) and os.path.isfile(os.path.join(src, name)):
            shutil.copy2(os.path.join(src, name), bindir)
    exe = os.path.join(bindir, os.path.basename(path))
    shutil.copy2(path, exe)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bindir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return exe, env


def run(cmd, env, timeout):
    """Run a hetsched command; its stdout, or exit with its error."""
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"timed out after {timeout} s: {' '.join(cmd)}")
    if result.returncode != 0:
        sys.exit(f"failed ({result.returncode}): {' '.join(cmd)}\n{result.stderr.strip()}")
    return result.stdout


def model_args(spec):
    """hetsched's model arguments: 'bert:layers=2:seq=64' -> ['zoo:bert',
    '--param', 'layers=2', '--param', 'seq=64']; an .onnx path as it is."""
    spec = ALIASES.get(spec, spec)
    name, *params = spec.split(":")
    if name.endswith(".onnx"):
        if params:
            sys.exit(f"--models: '{spec}': zoo parameters apply to zoo models only")
        return [name]
    args = ["zoo:" + name]
    for p in params:
        if "=" not in p:
            sys.exit(f"--models: '{spec}': expected NAME or NAME:KEY=VALUE:..., got '{p}'")
        args += ["--param", p]
    return args


def platform_file(name):
    path = name if name.endswith(".json") else os.path.join(REPO, "platforms", name + ".json")
    if not os.path.isfile(path):
        sys.exit(f"--platforms: no platform file '{path}'")
    return path


# The measured column of compare's printed table: "p50 (min-max)". The JSON
# carries the p50 only; the spread comes from the table.
SPREAD = re.compile(r"^\s+(\S+)\s.*?\s(\d+\.\d+) \((\d+\.\d+)-(\d+\.\d+)\)")


def spreads(stdout):
    found = {}
    for line in stdout.splitlines():
        m = SPREAD.match(line)
        if m:
            found[m.group(1)] = (float(m.group(3)), float(m.group(4)))
    return found


def compare(exe, env, model, target, db, out_json, measure, rounds, warmups, schedulers, timeout):
    cmd = [exe, "compare"] + model_args(model) + target + ["--db", db, "--json", out_json]
    if schedulers:
        cmd += ["--schedulers", schedulers]
    if measure:
        cmd += ["--measure", "-n", str(rounds), "-w", str(warmups)]
    start = time.time()
    stdout = run(cmd, env, timeout)
    with open(out_json) as f:
        result = json.load(f)
    result["spread"] = spreads(stdout) if measure else {}
    result["wall_s"] = time.time() - start
    return result


# ---------------------------------------------------------------- figures

def best_predicted_sequential(result, devices=None):
    """The fastest single device by prediction (among `devices` if given)."""
    rows = [s for s in result["sequential"] if s["predicted_ms"] is not None
            and (devices is None or s["device"] in devices)]
    return min(rows, key=lambda s: s["predicted_ms"]) if rows else None


def rows_of(result, kind):
    """CSV rows: the single-device baselines, then the schedulers."""
    measured = result["measured"]
    best_pred = best_predicted_sequential(result)["predicted_ms"]
    lb = result["lower_bound_ms"]
    out = []
    entries = [("sequential", s["device"], s) for s in result["sequential"]]
    entries += [("scheduler", s["name"], s) for s in result["schedulers"]]
    for role, name, e in entries:
        pred, p50 = e.get("predicted_ms"), e.get("measured_p50_ms")
        lo, hi = result["spread"].get(name, (None, None))
        out.append({
            "kind": kind, "platform": result["platform"], "model": result["model_label"], "role": role,
            "entry": name, "predicted_ms": rnd(pred), "measured_p50_ms": rnd(p50),
            "measured_min_ms": rnd(lo) if p50 is not None else "",
            "measured_max_ms": rnd(hi) if p50 is not None else "",
            "plan_ms": rnd(e.get("plan_ms")), "lower_bound_ms": rnd(lb),
            "ratio_to_bound": rnd(pred / lb, 4) if pred and lb > 0 else "",
            "best_sequential_device": result["best_sequential_device"],
            "best_sequential_ms": rnd(result["best_sequential_ms"]),
            "speedup_predicted": rnd(best_pred / pred, 4) if pred else "",
            "speedup_measured": rnd(result["best_sequential_ms"] / p50, 4) if measured and p50 else "",
            "error": e.get("error", ""),
            "others_busy_profile": rnd(result.get("others_busy", {}).get("profile"), 2),
            "others_busy_compare": rnd(result.get("others_busy", {}).get("compare"), 2),
        })
    return out


def rnd(x, digits=3):
    return "" if x is None or x == "" else round(x, digits)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def auto_check(result):
    """auto's promise: never predicted slower than any other scheduler's plan
    nor any single device of the platform.  Returns the violations as
    (what, its ms, auto's ms)."""
    by_name = {s["name"]: s for s in result["schedulers"]}
    auto = by_name.get("auto")
    if not auto or auto["predicted_ms"] is None:
        return None
    others = [(s["name"], s["predicted_ms"]) for s in result["schedulers"]
              if s["name"] != "auto" and s["predicted_ms"] is not None]
    others += [("sequential " + s["device"], s["predicted_ms"]) for s in result["sequential"]
               if s["device"] in result["platform_devices"]]
    # 1e-6 relative: the same plan simulated twice gives the same figure.
    return [(n, ms, auto["predicted_ms"]) for n, ms in others if auto["predicted_ms"] > ms * (1 + 1e-6)]


def below_bound(result):
    """Plans predicted faster than compare's lower bound: the bound does not
    hold for them (lower_bound.h says when it may not)."""
    lb = result["lower_bound_ms"]
    return [(s["name"], s["predicted_ms"]) for s in result["schedulers"]
            if s["predicted_ms"] is not None and s["predicted_ms"] < lb * (1 - 1e-6)]


# ---------------------------------------------------------------- markdown

def fmt_ms(x):
    if x is None:
        return "n/a"
    return f"{x:.1f}" if x >= 100 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def entry_order(results):
    """Baselines first (in platform order), then the schedulers as compare lists them."""
    devices, names = [], []
    for r in results:
        for s in r["sequential"]:
            if s["device"] not in devices:
                devices.append(s["device"])
        for s in r["schedulers"]:
            if s["name"] not in names:
                names.append(s["name"])
    return devices, names


def measured_table(results):
    devices, names = entry_order(results)
    header = ["plan"]
    for r in results:
        header += [f"{r['model_label']} predicted ms", "measured p50 ms [min..max]", "speed-up"]
    rows = []

    def cells(r, e):
        if e is None:
            return ["", "", ""]
        if e.get("error"):
            return ["n/a", "n/a", "n/a"]
        p50 = e.get("measured_p50_ms")
        lo, hi = r["spread"].get(e.get("name") or e.get("device"), (None, None))
        meas = f"{fmt_ms(p50)} [{fmt_ms(lo)}..{fmt_ms(hi)}]" if p50 is not None and lo is not None else fmt_ms(p50)
        speed = f"{r['best_sequential_ms'] / p50:.2f}x" if p50 else "n/a"
        return [fmt_ms(e.get("predicted_ms")), meas, speed]

    for d in devices:
        row = [f"sequential {d}"]
        for r in results:
            row += cells(r, next((s for s in r["sequential"] if s["device"] == d), None))
        rows.append(row)
    for n in names:
        row = [f"**{n}**" if n == "auto" else n]
        for r in results:
            row += cells(r, next((s for s in r["schedulers"] if s["name"] == n), None))
        rows.append(row)
    row = ["best sequential (measured)"]
    for r in results:
        row += ["", f"{r['best_sequential_device']}: {fmt_ms(r['best_sequential_ms'])}", "1.00x"]
    rows.append(row)
    row = ["lower bound"]
    for r in results:
        row += [fmt_ms(r["lower_bound_ms"]), "", ""]
    rows.append(row)
    row = ["other processes (cores busy)"]
    for r in results:
        b = r["others_busy"]
        row += [f"profiling: {b['profile']:.2f}", f"measuring: {b['compare']:.2f}", ""]
    rows.append(row)
    return md_table(header, rows)


def simulated_table(results):
    devices, names = entry_order(results)
    header = ["plan"] + [r["model_label"] for r in results]
    rows = []

    def cell(r, e):
        if e is None:
            return ""
        pred = e.get("predicted_ms")
        if pred is None:
            return "n/a" + (" (error)" if e.get("error") else "")
        best = best_predicted_sequential(r)["predicted_ms"]
        return f"{fmt_ms(pred)} ({pred / r['lower_bound_ms']:.2f} / {best / pred:.2f}x)"

    for d in devices:
        rows.append([f"sequential {d}"] + [cell(r, next((s for s in r["sequential"] if s["device"] == d), None))
                                           for r in results])
    for n in names:
        rows.append([f"**{n}**" if n == "auto" else n] +
                    [cell(r, next((s for s in r["schedulers"] if s["name"] == n), None)) for r in results])
    rows.append(["lower bound"] + [fmt_ms(r["lower_bound_ms"]) for r in results])
    rows.append(["best single device"] + [f"{r['best_sequential_device']}" for r in results])
    return md_table(header, rows)


def seed_value(result, comp):
    """Our speed-up of comp's scheduler over its baseline, predicted."""
    sched = next((s for s in result["schedulers"] if s["name"] == comp["scheduler"]), None)
    if sched is None or sched["predicted_ms"] is None:
        return None
    kind, _, what = comp["baseline"].partition(":")
    if kind == "best":
        base = best_predicted_sequential(result, result["platform_devices"])
        base_ms = base["predicted_ms"] if base else None
    elif kind == "device":
        base_ms = next((s["predicted_ms"] for s in result["sequential"] if s["device"] == what), None)
    else:
        base_ms = next((s["predicted_ms"] for s in result["schedulers"] if s["name"] == what), None)
    return base_ms / sched["predicted_ms"] if base_ms else None


def seeds_table(sim, models):
    header = ["seed", "comparison (ours)", "ours is", "platform"] + models + ["published", "what the paper measured"]
    rows = []
    for comp in SEED_COMPARISONS:
        by_model = sim.get(comp["platform"])
        if not by_model:
            continue
        row = [comp["seed"], comp["title"], "simulated", comp["platform"]]
        for m in models:
            r = by_model.get(m)
            v = seed_value(r, comp) if r else None
            quoted = comp["per_model"].get(m)
            row.append(("n/a" if v is None else f"{v:.2f}x") + (f" (paper: {quoted})" if quoted else ""))
        row += [comp["published"], comp["what"]]
        rows.append(row)
    return md_table(header, rows)


# ---------------------------------------------------------------- machine

def machine(exe, env):
    out = run([exe, "devices"], env, 60)
    m = re.search(r"^CPU:\s*(.+)$", out, re.M)
    cpu = m.group(1).strip() if m else "unknown CPU"
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    # -dirty: what the figures depend on (the engine's sources, the platform
    # files) differs from the commit; edits to bench/, docs or the Makefile
    # change nothing measured.
    if commit != "unknown" and git("status", "--porcelain", "--", "src", "include", "tools", "platforms",
                                   "CMakeLists.txt"):
        commit += "-dirty"
    return {"cpu": cpu, "cores": os.cpu_count(), "commit": commit,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def git(*argv):
    try:
        r = subprocess.run(["git", "-C", REPO] + list(argv), capture_output=True, text=True)
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


class OthersBusy:
    """How many cores other processes kept busy while a block ran: the
    machine's busy CPU time (/proc/stat, hypervisor steal included) minus our
    children's (getrusage), over the wall time. On a shared machine this says
    which figures were taken while something else competed for the cores."""

    def __enter__(self):
        self.start = (busy_cpu_s(), children_cpu_s(), time.time())
        return self

    def __exit__(self, *exc):
        busy, ours, now = busy_cpu_s(), children_cpu_s(), time.time()
        wall = max(now - self.start[2], 1e-3)
        self.cores = max(0.0, ((busy - self.start[0]) - (ours - self.start[1])) / wall)
        return False


def busy_cpu_s():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is inside user)
    busy = sum(fields[:3]) + sum(fields[5:8])
    return busy / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wait_for_quiet(threshold, max_wait):
    """Wait (up to max_wait s) until other processes keep fewer than
    `threshold` cores busy over 2 s; returns the last reading."""
    deadline = time.time() + max_wait
    while True:
        with OthersBusy() as b:
            time.sleep(2)
        if b.cores < threshold or time.time() >= deadline:
            return b.cores


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", default=os.path.join(REPO, "build", "hetsched"), help="the binary (copied first)")
    ap.add_argument("--quick", action="store_true",
                    help=f"measured part on {MEASURED_MODELS_QUICK} only, 5 rounds, 1 warm-up, profiles of 5 repeats")
    ap.add_argument("--models", default=None,
                    help=f"models measured on the real devices (default {MEASURED_MODELS}; also squeezenet1_0, "
                         "bert-small, or NAME:KEY=VALUE:... for zoo parameters; '' skips the measured part)")
    ap.add_argument("--sim-models", default=SIM_MODELS,
                    help=f"models simulated on the platforms (default {SIM_MODELS})")
    ap.add_argument("--platforms", default=PLATFORMS,
                    help=f"platform files: names in platforms/ or paths (default {PLATFORMS}; '' skips them)")
    ap.add_argument("--devices", default="cpu:0,cpu:1", help="real devices of the measured part (default cpu:0,cpu:1)")
    ap.add_argument("--schedulers", default="", help="schedulers to compare (default: every registered one)")
    ap.add_argument("--rounds", type=int, default=None, help="measured rounds per plan (default 10; --quick 5)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed runs per plan first (default 2; --quick 1)")
    ap.add_argument("--profile-repeats", type=int, default=None,
                    help="timed runs per profiled unit (default 10; --quick 5)")
    ap.add_argument("--db", default=None,
                    help="profile database to use and keep (default: a fresh one in the work directory)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", "schedulers"),
                    help="results prefix: writes OUT.csv and OUT.md (default bench/results/schedulers)")
    ap.add_argument("--quiet-below", type=float, default=0.3,
                    help="before each measured model, wait until other processes keep fewer cores busy (default 0.3)")
    ap.add_argument("--max-wait", type=int, default=None, help="seconds to wait for that (default 120; --quick 30)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds allowed for one hetsched command")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (plans' JSON, profile database)")
    args = ap.parse_args()
    if args.models is None:
        args.models = MEASURED_MODELS_QUICK if args.quick else MEASURED_MODELS
    for name, quick, full in (("rounds", 5, 10), ("warmup", 1, 2), ("profile_repeats", 5, 10), ("max_wait", 30, 120)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if args.rounds < 1 or args.warmup < 0 or args.profile_repeats < 1:
        sys.exit("--rounds and --profile-repeats must be >= 1, --warmup >= 0")
    measured_models = [m for m in args.models.split(",") if m]
    sim_models = [m for m in args.sim_models.split(",") if m]
    platforms = [p for p in args.platforms.split(",") if p]
    for m in measured_models + sim_models:
        model_args(m)  # bad specs fail before any work
    platform_paths = {os.path.splitext(os.path.basename(platform_file(p)))[0]: platform_file(p) for p in platforms}
    if not os.path.isfile(args.hetsched):
        sys.exit(f"no hetsched binary at {args.hetsched} (build it first)")

    work = tempfile.mkdtemp(prefix="hetsched-schedulers-")
    try:
        exe, env = snapshot_hetsched(args.hetsched, work)
        db = os.path.abspath(args.db) if args.db else os.path.join(work, "profile.db")
        info = machine(exe, env)
        info["load_start"] = loadavg()
        started = time.time()
        print(f"{info['cpu']}, {info['cores']} cores, hetsched {info['commit']}, {info['date']}, "
              f"load {info['load_start']}", flush=True)

        csv_rows = []
        # A. measured on the real devices
        measured = []
        devices = args.devices.split(",")
        union = None
        if len(devices) >= 2:
            cores = []
            for d in devices:
                m = re.fullmatch(r"cpu:(\d+)(?:-(\d+))?", d)
                if not m:
                    sys.exit(f"--devices: '{d}': expected cpu:N or cpu:N-M")
                lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
                cores += range(lo, hi + 1)
            cores.sort()
            # compare's union device: one device on all the groups' cores
            if cores == list(range(cores[0], cores[-1] + 1)):
                union = f"cpu:{cores[0]}-{cores[-1]}"
        for model in measured_models:
            before = wait_for_quiet(args.quiet_below, args.max_wait)
            t0 = time.time()
            with OthersBusy() as during_profile:
                for spec in [args.devices] + ([union] if union else []):
                    run([exe, "profile"] + model_args(model) + ["--devices", spec, "--db", db, "-w", "3",
                                                                 "-r", str(args.profile_repeats)], env, args.timeout)
            t1 = time.time()
            with OthersBusy() as during_compare:
                r = compare(exe, env, model, ["--devices", args.devices], db,
                            os.path.join(work, f"measured-{model.replace(':', '_')}.json"), True, args.rounds,
                            args.warmup, args.schedulers, args.timeout)
            r["others_busy"] = {"before": before, "profile": during_profile.cores, "compare": during_compare.cores}
            r["model_label"] = model
            r["platform"] = args.devices
            r["platform_devices"] = devices
            measured.append(r)
            csv_rows += rows_of(r, "measured")
            auto = next((s for s in r["schedulers"] if s["name"] == "auto"), None)
            print(f"measured  {model:14} profiled in {t1 - t0:5.0f} s, compared in {r['wall_s']:4.0f} s "
                  f"(other processes: {before:.2f} / {during_profile.cores:.2f} / {during_compare.cores:.2f} "
                  f"cores busy "
                  f"before / profiling / comparing); best sequential "
                  f"{r['best_sequential_device']} {r['best_sequential_ms']:.2f} ms"
                  + (f", auto {auto['measured_p50_ms']:.2f} ms" if auto and auto.get("measured_p50_ms") else ""),
                  flush=True)

        # B. simulated on the platform files
        sim = {}
        for pname, path in platform_paths.items():
            with open(path) as f:
                pdevs = ["emu:" + d["name"] for d in json.load(f)["devices"]]
            sim[pname] = {}
            for model in sim_models:
                r = compare(exe, env, model, ["--platform", path], db,
                            os.path.join(work, f"sim-{pname}-{model.replace(':', '_')}.json"), False, 0, 0,
                            args.schedulers, args.timeout)
                r["model_label"] = model
                r["platform"] = pname
                r["platform_devices"] = pdevs
                sim[pname][model] = r
                csv_rows += rows_of(r, "simulated")
                auto = next((s for s in r["schedulers"] if s["name"] == "auto"), None)
                print(f"simulated {pname:12} {model:14} lower bound {r['lower_bound_ms']:8.3f} ms"
                      + (f", auto {auto['predicted_ms']:8.3f} ms ({auto['predicted_ms'] / r['lower_bound_ms']:.2f}x)"
                         if auto and auto["predicted_ms"] else "") + f"  [{r['wall_s']:.0f} s]", flush=True)

        # the command as run, less --out (where the results went)
        argv, skip = [], False
        for a in sys.argv[1:]:
            if skip or a.startswith("--out"):
                skip = a == "--out"
                continue
            argv.append(a if re.fullmatch(r"[\w.,:=/+-]+", a) else repr(a))
        command = " ".join(["bench/schedulers.py"] + argv)
        info["load_end"] = loadavg()
        info["minutes"] = (time.time() - started) / 60
        settings = (f"measured: {args.devices} (+ {union}), {args.rounds} rounds, {args.warmup} warm-up{'' if args.warmup == 1 else 's'}, "
                    f"profiles -w 3 -r {args.profile_repeats}" if measured_models else "measured: none")
        header = (f"{info['cpu']}, {info['cores']} cores, {info['date']}, hetsched {info['commit']}, "
                  f"load average {info['load_start']} at the start, {info['load_end']} at the end, "
                  f"{info['minutes']:.1f} min; {settings}")

        # summaries
        summary = []
        problems = []
        for pname, by_model in sim.items():
            ratios = {m: next(s["predicted_ms"] for s in r["schedulers"] if s["name"] == "auto") / r["lower_bound_ms"]
                      for m, r in by_model.items()
                      if any(s["name"] == "auto" and s["predicted_ms"] for s in r["schedulers"])}
            held = {m: v for m, v in ratios.items() if not below_bound(by_model[m])}
            g, gh = geomean(list(ratios.values())), geomean(list(held.values()))
            if g is None:
                continue
            verdict = lambda x: f"{'within' if x <= AUTO_TARGET else 'above'} the {AUTO_TARGET}x target"
            if len(held) == len(ratios):
                summary.append(f"{pname}: auto / lower bound, geometric mean over {len(ratios)} models: {g:.2f}x "
                               f"({verdict(g)})")
            else:
                # A "bound" some plan beats is no bound there: a ratio under 1
                # would flatter the mean, so the mean that counts leaves it out.
                beaten = ", ".join(m for m in ratios if m not in held)
                summary.append(f"{pname}: auto / lower bound, geometric mean over the {len(held)} models where the "
                               f"bound holds: " + (f"{gh:.2f}x ({verdict(gh)})" if gh else "n/a")
                               + f"; on {beaten} some plan is predicted under the bound (see the findings), "
                               f"so the mean over all {len(ratios)} ({g:.2f}x) means little")
        for r in measured + [r for by_model in sim.values() for r in by_model.values()]:
            v = auto_check(r)
            where = f"{r['platform']} {r['model_label']}"
            if v:
                for n, ms, a in v:
                    problems.append(f"auto predicted slower than {n} on {where}: {a:.3f} ms against {ms:.3f} ms")
            for n, ms in below_bound(r):
                problems.append(f"{n} predicted under the lower bound on {where}: {ms:.3f} ms "
                                f"< {r['lower_bound_ms']:.3f} ms")
            unions = [s for s in r["sequential"] if s["device"] not in r["platform_devices"]]
            auto = next((s for s in r["schedulers"] if s["name"] == "auto"), None)
            for u in unions:
                if (auto and auto["predicted_ms"] and u["predicted_ms"] is not None
                        and u["predicted_ms"] < auto["predicted_ms"]):
                    problems.append(f"on {where} the union device {u['device']} alone is predicted faster "
                                    f"({u['predicted_ms']:.2f} ms) than auto's plan ({auto['predicted_ms']:.2f} ms)")
            for s in r["schedulers"]:
                if s.get("error") and s["name"] != "optimal":
                    problems.append(f"{s['name']} failed on {where}: {s['error']}")
        checked = len(measured) + sum(len(b) for b in sim.values())
        auto_ok = not any(p.startswith("auto predicted slower") for p in problems)
        summary.append(f"auto never predicted slower than another scheduler or single device of the platform: "
                       f"{'yes' if auto_ok else 'NO'} ({checked} model/platform pairs)")

        # CSV
        out_dir = os.path.dirname(os.path.abspath(args.out))
        os.makedirs(out_dir, exist_ok=True)
        with open(args.out + ".csv", "w", newline="") as f:
            f.write(f"# {header}\n")
            writer = csv.DictWriter(f, fieldnames=list(csv_rows[0].keys()) if csv_rows else ["kind"])
            writer.writeheader()
            writer.writerows(csv_rows)

        # Markdown
        md = [f"# Schedulers side by side\n", f"Generated by `{command}`: "
              f"{header}.\n"]
        if measured:
            md += ["## A. Measured: real devices " + args.devices + "\n",
                   "Predicted: the simulator on the profile taken just before. Measured: median of the rounds "
                   "[min..max of the rounds], every plan and baseline interleaved in each round. Speed-up: the best "
                   "single device's measured p50 (the union device " + (union or "-") + " included) / the plan's "
                   "measured p50. Other processes: cores that other processes kept busy while this model was profiled "
                   "and measured (the machine is shared); where it is well above 0 the measured figures are "
                   "disturbed.\n", measured_table(measured), ""]
        if sim:
            md += ["## B. Simulated: platform files\n",
                   "Each cell: predicted ms (ratio to the lower bound / speed-up over the best single device, "
                   "predicted). Nothing here ran: every figure is the simulator's, from the platform's roofline "
                   "models. n/a: the scheduler refused (optimal: graph above its max_tasks).\n"]
            for pname, by_model in sim.items():
                md += [f"### {pname} (simulated)\n", simulated_table(list(by_model.values())), ""]
        md += ["## Summary\n"] + [f"- {s}" for s in summary] + [""]
        if problems:
            md += ["Findings (each a possible bug to look into):\n"] + [f"- {p}" for p in problems] + [""]
        if sim:
            md += ["## C. The seed papers' comparisons beside ours\n",
                   "Ours: speed-up of the scheduler's plan over the baseline, both predicted by the simulator on "
                   "the platform file (simulated). The papers' figures are measured on real hardware: compare "
                   "directions and orders of magnitude, not digits.\n",
                   seeds_table(sim, sim_models), ""]
        with open(args.out + ".md", "w") as f:
            f.write("\n".join(md))

        print()
        for s in summary:
            print(s)
        for p in problems:
            print("finding:", p)
        print(f"\nwrote {args.out}.csv and {args.out}.md ({info['minutes']:.1f} min)")
    finally:
        # the copied binary, the plans' JSON and the profile database
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
