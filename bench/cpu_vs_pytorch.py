#!/usr/bin/python3
"""CPU latency benchmark: hetsched against PyTorch at batch 1.

Method
------
1. Network.  Each torchvision model (weights=None, eval(), batch 1; googlenet and
   inception_v3 with aux_logits=False, init_weights=True) is built once from a
   fixed seed.  Its state_dict is saved with torch.save and the model is exported
   once to ONNX (opset 13, input named "input").  hetsched runs the .onnx file;
   each PyTorch worker rebuilds the same architecture and loads the saved
   state_dict, so both engines compute the same network with the same weights.
   BatchNorm layers get random affine parameters and running statistics from
   one random batch first (as tests/python/torch_compare.py does; --raw-init
   skips it): with torchvision's initial statistics random-weight activations
   die or explode with depth, which would make the output check meaningless
   and could bring denormals or infinities into the timed arithmetic.  (The
   ONNX exporter folds eval-mode BatchNorm into the preceding Conv, as any ONNX
   deployment does; PyTorch eager runs BatchNorm as its own op.)
2. Input.  One seeded random tensor per model (1x3x224x224, 1x3x299x299 for
   inception_v3), saved as .npy: hetsched gets it with --input input=FILE.npy,
   the PyTorch worker loads the same file.  In the first round hetsched writes
   its output and each PyTorch worker reports max |hetsched - torch| (a sanity
   check that both ran the same network, not a timing input).
3. Threads.  "1": hetsched --devices cpu:0 (one core, core 0); PyTorch
   torch.set_num_threads(1) in a worker process pinned to core 0 with
   os.sched_setaffinity (before torch is imported), so both use the same
   single core.  "all": hetsched --devices cpu (all cores); PyTorch
   torch.set_num_threads(os.cpu_count()), no pinning.
4. PyTorch modes.  "eager" (the torch_* columns): the nn.Module called under
   torch.no_grad() and torch.inference_mode().  "jit" (the torch_jit_*
   columns): the same module traced, frozen and passed through
   torch.jit.optimize_for_inference, PyTorch's own CPU inference path (Conv+BN
   folded, every convolution on oneDNN); tracing and its two profiling runs are
   load time, not timed.  Why both: PyTorch 1.13 eager sends 1x1 convolutions
   (always with one thread) and small convolutions to its im2col+GEMM path,
   which on Debian's build calls the netlib reference BLAS, so eager is far
   from oneDNN speed there; "jit" is the strong baseline.  --torch-modes
   chooses (default eager,jit).
5. Processes.  Every timing run is a fresh process: `hetsched run ... --json`
   for hetsched, this file with --worker for PyTorch.  Neither engine's load
   time is timed.  Peak RSS: the PyTorch worker reports its own
   getrusage(RUSAGE_SELF).ru_maxrss (the Python interpreter, the torch import
   and the model); hetsched's is that child's ru_maxrss from os.wait4(pid).
   Linux carries the parent's peak RSS into a child's ru_maxrss at exec, so this
   driver never imports torch or numpy itself (the export runs in a helper
   process too) and keeps that floor at about 14 MiB (printed as "RSS floor").
   The hetsched binary and libhetsched.so are copied into the work directory
   at the start, so that a rebuild while the benchmark runs cannot mix versions.
6. Timing.  Each run does W untimed warm-ups and N timed iterations.  hetsched
   always does one extra untimed "first run" before its W warm-ups, so the
   PyTorch worker does 1 + W untimed runs too.  PyTorch times each call with
   time.perf_counter; hetsched's per-iteration times come from its JSON
   (times_ms).
7. Interleaving.  Rounds (default 5) are interleaved: in each round, for every
   model and thread setting, the PyTorch run(s) and the hetsched run go back to
   back, and hetsched goes first in rounds 1, 3, 5 and last in rounds 2, 4
   (first in round 1 so that PyTorch can compare with its output), so slow
   drift of the machine (other jobs, frequency, thermals) hits both engines
   alike.
8. Statistics.  Per engine and (model, threads): the median of each round's
   per-iteration times, then the median of those per-round medians (reported),
   and their min..max (the spread between rounds).  ratio = hetsched median /
   PyTorch eager median, ratio_jit = hetsched median / PyTorch jit median:
   <= 1.00 means hetsched is at least as fast.  Peak RSS: maximum over rounds.

Output: a CSV (default bench/results/cpu_vs_pytorch.csv), one row per
(model, threads), with a '# machine: ...' header comment line (CPU model, core
count, date, hetsched git commit, torch version), and the same as a printed
table.

Examples:
    /usr/bin/python3 bench/cpu_vs_pytorch.py --hetsched build/hetsched
    /usr/bin/python3 bench/cpu_vs_pytorch.py --hetsched build/hetsched --quick \\
        --models resnet50,mobilenet_v2 --threads 1 --torch-modes jit
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
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

ALL_MODELS = ["resnet50", "googlenet", "inception_v3", "squeezenet1_0",
              "mobilenet_v2", "densenet121"]
TORCH_MODES = ["eager", "jit"]
SEED = 0

CSV_COLUMNS = ["model", "threads",
               "hetsched_median_ms", "hetsched_min_ms", "hetsched_max_ms",
               "torch_median_ms", "torch_min_ms", "torch_max_ms",
               "ratio", "hetsched_peak_rss_mib", "torch_peak_rss_mib",
               "rounds", "iterations",
               # PyTorch's TorchScript/oneDNN path and diagnostics, after the fixed columns
               "torch_jit_median_ms", "torch_jit_min_ms", "torch_jit_max_ms",
               "ratio_jit", "torch_jit_peak_rss_mib",
               "max_abs_diff", "max_abs_output", "hetsched_reference_nodes"]


# --------------------------------------------------------------------------
# model definition (shared by the exporter and the PyTorch worker)
# --------------------------------------------------------------------------

def input_shape(name):
    side = 299 if name == "inception_v3" else 224
    return (1, 3, side, side)


def calibrate_batch_norm(model, shape):
    """Random BN affine parameters, running statistics from one random batch
    (as tests/python/torch_compare.py does): with torchvision's initial BN
    statistics (mean 0, variance 1) random-weight activations die or explode
    with depth (googlenet's output is its fc bias, inception_v3's reaches
    1e12), which makes the output check meaningless and could put denormals or
    infinities in the timed arithmetic.  It changes values, not the network."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average: after one batch, that batch's statistics
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
        if bns:
            model.train()
            model(torch.rand(4, *shape[1:]) * 2 - 1)
    model.eval()


def build_model(name):
    """The torchvision model, random weights, eval mode."""
    import torchvision
    kwargs = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kwargs.update(aux_logits=False, init_weights=True)
    return getattr(torchvision.models, name)(**kwargs).eval()


# --------------------------------------------------------------------------
# helper processes: export (once) and the PyTorch worker (one per timing run)
# --------------------------------------------------------------------------

def prepare_main(args):
    """Export each model once into args.prepare; print the jobs as JSON."""
    import warnings
    warnings.filterwarnings("ignore")  # tracer warnings of the exporter
    import numpy as np
    import torch

    jobs = []
    for name in args.models.split(","):
        d = os.path.join(args.prepare, name)
        os.makedirs(d)
        torch.manual_seed(SEED)
        model = build_model(name)
        if not args.raw_init:
            calibrate_batch_norm(model, input_shape(name))
        x = torch.randn(*input_shape(name), generator=torch.Generator().manual_seed(SEED + 1))
        job = {"name": name, "dir": d,
               "onnx": os.path.join(d, name + ".onnx"),
               "state_dict": os.path.join(d, name + ".pt"),
               "input": os.path.join(d, "input.npy"),
               "hs_out_dir": os.path.join(d, "hetsched_out")}
        torch.save(model.state_dict(), job["state_dict"])
        np.save(job["input"], x.numpy())
        with torch.no_grad():
            torch.onnx.export(model, x, job["onnx"], opset_version=13,
                              input_names=["input"], output_names=["output"])
        print("  exported %-14s %s" % (name, "x".join(map(str, input_shape(name)))),
              file=sys.stderr, flush=True)
        jobs.append(job)
    print(json.dumps({"jobs": jobs, "torch": torch.__version__}))
    return 0


def worker_main(args):
    # Pin before torch is imported so that every thread it starts inherits it.
    if args.pin_core is not None:
        os.sched_setaffinity(0, {args.pin_core})
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    model = build_model(args.model)
    model.load_state_dict(torch.load(args.state_dict))
    model.eval()
    x = torch.from_numpy(np.load(args.input))

    grad_off = torch.inference_mode if hasattr(torch, "inference_mode") else torch.no_grad
    if args.torch_mode == "jit":
        # PyTorch's own CPU inference path: frozen TorchScript, Conv+BN folded,
        # convolutions prepacked for oneDNN.
        with torch.no_grad():
            model = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, x)))
            for _ in range(2):  # the profiling executor specialises on the first runs: load time
                model(x)
    from time import perf_counter
    times = []
    with torch.no_grad(), grad_off():
        for _ in range(1 + args.warmup):  # one "first run" plus W warm-ups, as hetsched does
            y = model(x)
        for _ in range(args.iterations):
            t0 = perf_counter()
            y = model(x)
            times.append((perf_counter() - t0) * 1e3)
    y = y.numpy()
    diff = None
    if args.compare and os.path.exists(args.compare):
        other = np.load(args.compare)
        if other.shape == y.shape:
            diff = float(np.max(np.abs(other.astype(np.float64) - y.astype(np.float64))))
    print(json.dumps({
        "times_ms": times,
        "threads": torch.get_num_threads(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "max_abs_diff": diff,
        "max_abs_output": float(np.max(np.abs(y))),
    }))
    return 0


# --------------------------------------------------------------------------
# running children
# --------------------------------------------------------------------------

def run_child(cmd, timeout_s, env=None):
    """Run cmd; return (exit code, stdout, stderr, peak RSS in KiB of that child)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        killer = threading.Timer(timeout_s, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4 already
        out.seek(0)
        err.seek(0)
        return (proc.returncode, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), usage.ru_maxrss)


def run_torch(job, threads, mode, args, compare):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--torch-mode", mode,
           "--model", job["name"], "--state-dict", job["state_dict"],
           "--input", job["input"], "--threads", str(threads),
           "--warmup", str(args.warmup), "--iterations", str(args.iterations)]
    if threads == 1:
        cmd += ["--pin-core", "0"]
    if compare:
        cmd += ["--compare", os.path.join(job["hs_out_dir"], "output.npy")]
    rc, out, err, _ = run_child(cmd, args.timeout)
    if rc != 0:
        raise RuntimeError("PyTorch %s worker failed (exit %d): %s" % (mode, rc, last_line(err)))
    res = json.loads(out.strip().splitlines()[-1])
    return {"times": res["times_ms"], "rss_kib": res["peak_rss_kib"],
            "diff": res["max_abs_diff"], "max_out": res["max_abs_output"]}


def run_hetsched(job, threads, args, save_output):
    jpath = os.path.join(job["dir"], "hetsched.json")
    if os.path.exists(jpath):
        os.remove(jpath)
    cmd = [args.hetsched_run, "run", job["onnx"],
           "--devices", "cpu:0" if threads == 1 else "cpu",
           "--input", "input=" + job["input"],
           "-n", str(args.iterations), "-w", str(args.warmup), "--json", jpath]
    if save_output:
        cmd += ["--output-dir", job["hs_out_dir"]]
    rc, out, err, rss = run_child(cmd, args.timeout, args.hetsched_env)
    if rc != 0:
        raise RuntimeError("hetsched failed (exit %d): %s" % (rc, last_line(err or out)))
    with open(jpath) as f:
        res = json.load(f)
    m = re.search(r"(\d+) on reference kernels", out)
    return {"times": res["times_ms"], "rss_kib": rss,
            "ref_nodes": int(m.group(1)) if m else None}


def snapshot_hetsched(path, workdir):
    """Copy the binary and the shared libraries beside it (libhetsched.so) into
    workdir/bin, so that a rebuild during the benchmark cannot mix versions; the
    copy finds its libraries through LD_LIBRARY_PATH, which precedes RUNPATH."""
    bindir = os.path.join(workdir, "bin")
    os.makedirs(bindir)
    src = os.path.dirname(path)
    for name in os.listdir(src):
        if re.match(r"lib.*\.so(\.[0-9.]+)?$", name) and os.path.isfile(os.path.join(src, name)):
            shutil.copy2(os.path.join(src, name), bindir)
    exe = os.path.join(bindir, os.path.basename(path))
    shutil.copy2(path, exe)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bindir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env)
    if version.returncode != 0:
        raise RuntimeError("the hetsched copy does not start: %s" % last_line(version.stderr or version.stdout))
    return exe, env


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "(no output)"


# --------------------------------------------------------------------------
# machine description
# --------------------------------------------------------------------------

def machine_info(hetsched, torch_version):
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    # the commit of the checkout the hetsched binary sits in (<repo>/<build>/hetsched)
    src = os.path.dirname(os.path.dirname(hetsched))
    if git(src, "rev-parse", "--short", "HEAD") is None:
        src = REPO
    commit = git(src, "rev-parse", "--short", "HEAD") or "unknown"
    if commit != "unknown" and subprocess.run(
            ["git", "-C", src, "diff", "--quiet", "HEAD", "--"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 1:
        commit += "-dirty"
    return {"cpu": cpu, "cores": os.cpu_count(),
            "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "commit": commit, "torch": torch_version}


def git(path, *argv):
    try:
        r = subprocess.run(["git", "-C", path] + list(argv), capture_output=True, text=True)
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def machine_line(m):
    return ("machine: %s, %d cores, %s, hetsched %s, torch %s"
            % (m["cpu"], m["cores"], m["date"], m["commit"], m["torch"]))


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def parse_threads(text):
    out = []
    for t in text.split(","):
        t = t.strip()
        if not t:
            continue
        if t == "all":
            out.append(os.cpu_count())
        elif t.isdigit() and int(t) >= 1:
            out.append(int(t))
        else:
            raise argparse.ArgumentTypeError("threads: '1', 'all' or a count, got %r" % t)
    return list(dict.fromkeys(out))  # unique, in order ("all" on 1 core is 1)


def parse_list(choices, what):
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError("unknown %s %s; choose from %s"
                                             % (what, ",".join(bad), ",".join(choices)))
        return list(dict.fromkeys(items))
    return parse


def summarize(medians):
    if not medians:
        return (float("nan"),) * 3
    return statistics.median(medians), min(medians), max(medians)


def isnan(v):
    return isinstance(v, float) and math.isnan(v)


def fmt(v, spec="%.2f"):
    return "-" if v is None or v == "" or isnan(v) else spec % v


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="CPU latency of hetsched against PyTorch (batch 1, interleaved rounds). "
                    "The method is in this file's docstring and in bench/README.md.")
    ap.add_argument("--hetsched", help="path of the hetsched binary (required)")
    ap.add_argument("--models", default=ALL_MODELS, type=parse_list(ALL_MODELS, "model"),
                    help="comma-separated torchvision models (default: %s)" % ",".join(ALL_MODELS))
    ap.add_argument("--threads", default="1,all", type=parse_threads,
                    help="comma-separated thread settings: 1, all or a count (default: 1,all)")
    ap.add_argument("--torch-modes", default=TORCH_MODES, type=parse_list(TORCH_MODES, "mode"),
                    help="PyTorch baselines: eager, jit (TorchScript + optimize_for_inference) "
                         "(default: eager,jit)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 5; 3 with --quick)")
    ap.add_argument("--iterations", "-n", type=int,
                    help="timed iterations per run (default 20; 5 with --quick)")
    ap.add_argument("--warmup", "-w", type=int,
                    help="warm-up runs per run (default 3; 1 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer rounds and iterations: 3 rounds, 1 warm-up, 5 iterations")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "cpu_vs_pytorch.csv"),
                    help="CSV to write (default: bench/results/cpu_vs_pytorch.csv)")
    ap.add_argument("--timeout", type=float, default=900,
                    help="seconds before one child run is killed (default %(default)s)")
    ap.add_argument("--keep", metavar="DIR",
                    help="export the models into DIR (emptied first) and keep them "
                         "(default: a temporary directory, removed at the end)")
    ap.add_argument("--raw-init", action="store_true",
                    help="keep torchvision's initial BatchNorm statistics instead of calibrating "
                         "them on a random batch (values degenerate; timing should not change)")
    # helper-process modes (internal)
    ap.add_argument("--prepare", help=argparse.SUPPRESS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--torch-mode", choices=TORCH_MODES, default="eager", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--state-dict", help=argparse.SUPPRESS)
    ap.add_argument("--input", help=argparse.SUPPRESS)
    ap.add_argument("--compare", help=argparse.SUPPRESS)
    ap.add_argument("--pin-core", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        args.threads = args.threads[0]
        return worker_main(args)
    if args.prepare:
        args.models = ",".join(args.models)
        return prepare_main(args)

    if args.rounds is None:
        args.rounds = 3 if args.quick else 5
    if args.iterations is None:
        args.iterations = 5 if args.quick else 20
    if args.warmup is None:
        args.warmup = 1 if args.quick else 3
    if args.rounds < 1 or args.iterations < 1 or args.warmup < 0:
        ap.error("--rounds and --iterations must be >= 1, --warmup >= 0")
    if not args.hetsched:
        ap.error("--hetsched PATH is required")
    args.hetsched = os.path.abspath(args.hetsched)
    if not (os.path.isfile(args.hetsched) and os.access(args.hetsched, os.X_OK)):
        ap.error("no executable hetsched at %s" % args.hetsched)
    modes = args.torch_modes

    if args.keep:
        workdir = os.path.abspath(args.keep)
        if os.path.exists(workdir):
            shutil.rmtree(workdir)
        os.makedirs(workdir)
    else:
        workdir = tempfile.mkdtemp(prefix="hetsched-bench-")
    try:
        args.hetsched_run, args.hetsched_env = snapshot_hetsched(args.hetsched, workdir)
        print("exporting %s to %s" % (",".join(args.models), workdir), flush=True)
        prep = subprocess.run([sys.executable, os.path.abspath(__file__), "--prepare", workdir,
                               "--models", ",".join(args.models)]
                              + (["--raw-init"] if args.raw_init else []),
                              stdout=subprocess.PIPE, text=True)
        if prep.returncode != 0:
            sys.exit("export failed (exit %d)" % prep.returncode)
        prep = json.loads(prep.stdout.strip().splitlines()[-1])
        jobs = prep["jobs"]
        machine = machine_info(args.hetsched, prep["torch"])
        floor_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        print(machine_line(machine))
        print("rounds %d, %d warm-ups + %d timed iterations per run, threads %s, PyTorch %s; "
              "RSS floor %.0f MiB" % (args.rounds, args.warmup, args.iterations,
                                     ",".join(str(t) for t in args.threads), ",".join(modes),
                                     floor_mib), flush=True)

        keys = [(job["name"], t) for job in jobs for t in args.threads]
        res = {k: {"hetsched": [], "eager": [], "jit": [],
                   "rss": {"hetsched": 0, "eager": 0, "jit": 0},
                   "diff": None, "max_out": None, "ref": None, "errors": []} for k in keys}
        for rnd in range(args.rounds):
            for job in jobs:
                for t in args.threads:
                    r = res[(job["name"], t)]
                    first = rnd == 0
                    # hetsched first in even rounds (in round 0 so that PyTorch can compare
                    # against its output), last in odd rounds
                    order = ["hetsched"] + modes if rnd % 2 == 0 else modes + ["hetsched"]
                    line = []
                    for eng in order:
                        try:
                            if eng == "hetsched":
                                out = run_hetsched(job, t, args, first)
                                r["ref"] = out["ref_nodes"]
                            else:
                                out = run_torch(job, t, eng, args, first)
                                if first and out["diff"] is not None:
                                    r["diff"] = max(r["diff"] or 0.0, out["diff"])
                                r["max_out"] = out["max_out"]
                            r["rss"][eng] = max(r["rss"][eng], out["rss_kib"])
                            med = statistics.median(out["times"])
                            r[eng].append(med)
                            line.append("%s %.2f ms" % (eng, med))
                        except Exception as e:  # one broken run must not stop the rest
                            r["errors"].append("round %d %s: %s" % (rnd + 1, eng, e))
                            line.append("%s FAILED" % eng)
                            print("    %s" % e, flush=True)
                    print("  round %d/%d  %-14s threads %-2d  %s"
                          % (rnd + 1, args.rounds, job["name"], t, ", ".join(line)), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    nan = float("nan")
    rows = []
    for (name, t) in keys:
        r = res[(name, t)]
        hm, hmin, hmax = summarize(r["hetsched"])
        em, emin, emax = summarize(r["eager"])
        jm, jmin, jmax = summarize(r["jit"])
        rss = {k: (v / 1024.0 if r[k] else nan) for k, v in r["rss"].items()}
        rows.append({
            "model": name, "threads": t,
            "hetsched_median_ms": hm, "hetsched_min_ms": hmin, "hetsched_max_ms": hmax,
            "torch_median_ms": em, "torch_min_ms": emin, "torch_max_ms": emax,
            "ratio": hm / em if r["hetsched"] and r["eager"] else nan,
            "hetsched_peak_rss_mib": rss["hetsched"], "torch_peak_rss_mib": rss["eager"],
            "rounds": min(len(r[e]) for e in ["hetsched"] + modes),
            "iterations": args.iterations,
            "torch_jit_median_ms": jm, "torch_jit_min_ms": jmin, "torch_jit_max_ms": jmax,
            "ratio_jit": hm / jm if r["hetsched"] and r["jit"] else nan,
            "torch_jit_peak_rss_mib": rss["jit"],
            "max_abs_diff": nan if r["diff"] is None else r["diff"],
            "max_abs_output": nan if r["max_out"] is None else r["max_out"],
            "hetsched_reference_nodes": "" if r["ref"] is None else r["ref"],
        })

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    note = ("rounds %d, warm-ups %d, iterations %d; ms = median of per-round medians, min/max = "
            "spread of per-round medians; ratio = hetsched / torch eager, ratio_jit = hetsched / "
            "torch jit (<= 1.00: hetsched at least as fast)"
            % (args.rounds, args.warmup, args.iterations))
    with open(args.out, "w", newline="") as f:
        f.write("# %s\n# %s\n" % (machine_line(machine), note))
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for row in rows:
            w.writerow({k: ("" if isnan(v) else
                            "%.3g" % v if k.startswith("max_abs") else
                            "%.3f" % v if isinstance(v, float) else v)
                        for k, v in row.items()})

    print()
    print(machine_line(machine))
    print(note)
    cols = [("model", 13, lambda r: r["model"]),
            ("thr", 3, lambda r: str(r["threads"])),
            ("hetsched ms", 25, lambda r: span(r, "hetsched"))]
    if "eager" in modes:
        cols += [("torch eager ms", 25, lambda r: span(r, "torch")),
                 ("ratio", 5, lambda r: fmt(r["ratio"]))]
    if "jit" in modes:
        cols += [("torch jit ms", 25, lambda r: span(r, "torch_jit")),
                 ("r_jit", 5, lambda r: fmt(r["ratio_jit"]))]
    cols += [("hs MiB", 6, lambda r: fmt(r["hetsched_peak_rss_mib"], "%.0f"))]
    if "eager" in modes:
        cols += [("eagerMiB", 8, lambda r: fmt(r["torch_peak_rss_mib"], "%.0f"))]
    if "jit" in modes:
        cols += [("jit MiB", 7, lambda r: fmt(r["torch_jit_peak_rss_mib"], "%.0f"))]
    cols += [("rel.diff", 8, lambda r: fmt(rel_diff(r), "%.1g")),
             ("ref", 3, lambda r: str(r["hetsched_reference_nodes"]))]
    hdr = "  ".join(("%-" + str(wd) + "s") % name for name, wd, _ in cols)
    print(hdr)
    print("-" * len(hdr))
    for row in rows:
        print("  ".join(("%-" + str(wd) + "s") % get(row) for _, wd, get in cols))
    print("ref = nodes hetsched ran on reference kernels; rel.diff = max|hetsched - torch| / "
          "max|torch output| (first round)")
    errors = [(k, e) for k in keys for e in res[k]["errors"]]
    for (name, t), e in errors:
        print("error: %s threads %d: %s" % (name, t, e))
    print("wrote %s" % args.out)
    return 1 if errors else 0


def rel_diff(row):
    d, m = row["max_abs_diff"], row["max_abs_output"]
    if isnan(d) or isnan(m):
        return float("nan")
    return d / m if m > 0 else (0.0 if d == 0 else float("inf"))


def span(row, prefix):
    return "%s [%s..%s]" % (fmt(row[prefix + "_median_ms"]), fmt(row[prefix + "_min_ms"]),
                            fmt(row[prefix + "_max_ms"]))


if __name__ == "__main__":
    sys.exit(main())
