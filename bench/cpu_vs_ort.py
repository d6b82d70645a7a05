#!/usr/bin/python3
"""CPU latency benchmark: hetsched against ONNX Runtime 1.30 on the same .onnx files.

Method
------
1. Models.  Torchvision models with random weights (BatchNorm statistics from
   a random batch), exported to ONNX opset 13 as bench/auto_vs_single.py
   exports them; their int8 twins written by `hetsched quantize --per-channel`
   (static QDQ, calibrated on 8 random images); the zoo's BERT encoder (base
   sizes, sequence 128) in float32, quantized by `hetsched quantize
   --dynamic` and by `hetsched quantize --per-channel` (static QDQ MatMuls,
   calibrated on 8 random token sequences).  Both engines run the very same file on the very same input
   (.npy files: a seeded random image, BERT's random token ids).
2. ONNX Runtime.  The CPU library of the npm package onnxruntime-node 1.30.0
   (MLAS kernels), installed by `make bench-peers` into bench/peers and driven
   by bench/peers/ort_run.js: graph optimisation 'all', sequential executor,
   intraOpNumThreads = T, interOpNumThreads 1.
3. Threads.  "1": hetsched --devices cpu:0 (one device: core 0); ONNX Runtime
   with one thread in a process pinned to core 0.  "all" (2 here): hetsched
   --devices cpu (one device over every core); ONNX Runtime with T = every
   core, unpinned.
4. Processes and timing.  Every timing run is a fresh process (`hetsched run
   --json`, `node ort_run.js`): one untimed first run, W warm-ups, N timed
   runs; neither engine's load time is timed.
5. Interleaving.  In each round, per model and thread setting, the two
   engines run back to back, hetsched first in odd rounds and last in even
   ones.  Figures: per engine the median over the rounds of each run's
   median; the spread is the min-max of those medians; ratio = hetsched /
   ORT (<= 1.00: hetsched at least as fast).
6. Outputs.  In the first round both engines write their outputs; the CSV
   keeps the cosine similarity of hetsched's against ORT's and the largest
   difference relative to ORT's largest value.  That is also the check that
   every file `hetsched quantize` writes loads and runs in ONNX Runtime.

Run on a quiet machine: nothing else running.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

from bench_common import compared, cpu_model, geomean, run, write_csv
from cpu_vs_pytorch import input_shape, last_line, run_child, snapshot_hetsched

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")
MODELS = ("resnet18,resnet50,googlenet,inception_v3,squeezenet1_0,mobilenet_v2,densenet121,efficientnet_b0,"
          "shufflenet_v2_x1_0,mnasnet1_0,regnet_x_400mf,mobilenet_v3_small")
INT8 = "resnet50,mobilenet_v2"


def ort_available():
    return os.path.isdir(os.path.join(PEERS, "node_modules", "onnxruntime-node")) and shutil.which("node")


def prepare(args, work):
    """[{name, variant, onnx, inputs: {name: .npy}}] for every file both engines run."""
    from auto_vs_single import export_torchvision
    names = [n for n in args.models.split(",") if n]
    jobs = []
    rng = np.random.default_rng(0)
    paths = export_torchvision(",".join(names), work) if names else []
    int8 = set(n for n in args.int8.split(",") if n)
    for name, path in zip(names, paths):
        x = os.path.join(work, name + "_input.npy")
        np.save(x, rng.standard_normal(input_shape(name)).astype(np.float32))
        jobs.append({"name": name, "variant": "float32", "onnx": path, "inputs": {"input": x}})
        if name in int8:
            quantized = os.path.join(work, name + "_int8.onnx")
            cmd = [args.hetsched, "quantize", path, "-o", quantized, "--per-channel"]
            for k in range(8):
                image = os.path.join(work, f"{name}_calibration{k}.npy")
                np.save(image, rng.uniform(-1, 1, input_shape(name)).astype(np.float32))
                cmd += ["--calibration", f"input={image}"]
            run(cmd)
            jobs.append({"name": name, "variant": "int8", "onnx": quantized, "inputs": {"input": x}})
    if args.bert:
        sys.path.insert(0, args.python)
        import hetsched
        bert = os.path.join(work, "bert.onnx")
        hetsched.export_model("zoo:bert", bert)
        inputs = {}
        for name, value in hetsched.Session(bert, devices="cpu:0").random_inputs().items():
            inputs[name] = os.path.join(work, f"bert_{name}.npy")
            np.save(inputs[name], value)
        bert8 = os.path.join(work, "bert_int8.onnx")
        run([args.hetsched, "quantize", bert, "-o", bert8, "--dynamic"])
        jobs.append({"name": "bert", "variant": "float32", "onnx": bert, "inputs": inputs})
        jobs.append({"name": "bert", "variant": "int8-dynamic", "onnx": bert8, "inputs": inputs})
        bert8s = os.path.join(work, "bert_int8_static.onnx")
        run([args.hetsched, "quantize", bert, "-o", bert8s, "--per-channel"])
        jobs.append({"name": "bert", "variant": "int8-static", "onnx": bert8s, "inputs": inputs})
    return jobs


def run_hetsched(args, job, threads, out_dir):
    js = os.path.join(out_dir or args.work, "hetsched.json")
    cmd = [args.hetsched_run, "run", job["onnx"], "--devices", "cpu:0" if threads == 1 else "cpu",
           "-n", str(args.iterations), "-w", str(args.warmup), "--json", js]
    for name, path in job["inputs"].items():
        cmd += ["--input", f"{name}={path}"]
    if out_dir:
        cmd += ["--output-dir", out_dir]
    rc, out, err, _ = run_child(cmd, args.timeout, args.hetsched_env)
    if rc != 0:
        raise RuntimeError(f"hetsched failed (exit {rc}): {last_line(err or out)}")
    with open(js) as f:
        return json.load(f)["times_ms"]


def run_ort(args, job, threads, out_dir):
    cmd = ["node", os.path.join(PEERS, "ort_run.js"), job["onnx"], "--threads", str(threads),
           "--warmup", str(args.warmup), "--iterations", str(args.iterations)]
    for name, path in job["inputs"].items():
        cmd += ["--input", f"{name}={path}"]
    if out_dir:
        cmd += ["--output-dir", out_dir]
    if threads == 1:  # pinned like hetsched's cpu:0, which is core 0
        cmd = ["taskset", "-c", "0"] + cmd
    rc, out, err, _ = run_child(cmd, args.timeout)
    if rc != 0:
        raise RuntimeError(f"ONNX Runtime failed (exit {rc}): {last_line(err or out)}")
    return json.loads(out.strip().splitlines()[-1])["times_ms"]


def outputs_compared(dir_a, dir_b):
    """compared() of the outputs in two folders, all of them flattened into one array each."""
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(dir_b, "*.npy")))
    load = lambda folder: np.concatenate([np.load(os.path.join(folder, f)).ravel() for f in files])
    return compared(load(dir_a), load(dir_b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", default="build/hetsched")
    ap.add_argument("--python", default="build/python", help="folder holding the hetsched Python package (BERT's inputs)")
    ap.add_argument("--models", default=MODELS, help="comma-separated torchvision models (default: %(default)s)")
    ap.add_argument("--int8", default=INT8, help="models also quantized by `hetsched quantize` (default: %(default)s)")
    ap.add_argument("--no-bert", dest="bert", action="store_false", help="leave out the zoo's BERT encoder")
    ap.add_argument("--threads", default="1,all", help="thread settings: 1, all or a count (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", "--iterations", type=int, default=20)
    ap.add_argument("-w", "--warmup", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600, help="seconds before one run is killed")
    ap.add_argument("--keep", help="export the models into this folder and keep them there")
    ap.add_argument("--csv", default=os.path.join(HERE, "results", "cpu_vs_ort.csv"))
    args = ap.parse_args()
    if not ort_available():
        sys.exit("ONNX Runtime is not installed in bench/peers: run `make bench-peers` (needs node and npm)")
    threads = list(dict.fromkeys(os.cpu_count() if t == "all" else int(t) for t in args.threads.split(",")))
    args.hetsched = os.path.abspath(args.hetsched)
    args.work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="hetsched-ort-")
    os.makedirs(args.work, exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = args.work  # a profile database of its own
    try:
        args.hetsched_run, args.hetsched_env = snapshot_hetsched(args.hetsched, tempfile.mkdtemp(dir=args.work))
        jobs = prepare(args, args.work)
        times = {}
        checks = {}
        for rnd in range(args.rounds):
            for job in jobs:
                for t in threads:
                    key = (job["name"], job["variant"], t)
                    out_dirs = {}
                    if rnd == 0:
                        for engine in ("hetsched", "ort"):
                            out_dirs[engine] = os.path.join(args.work, "out", f"{job['name']}_{job['variant']}_{t}", engine)
                            os.makedirs(out_dirs[engine], exist_ok=True)
                    order = [("hetsched", run_hetsched), ("ort", run_ort)]
                    if rnd % 2:
                        order.reverse()
                    line = []
                    for engine, fn in order:
                        median = statistics.median(fn(args, job, t, out_dirs.get(engine)))
                        times.setdefault(key, {}).setdefault(engine, []).append(median)
                        line.append(f"{engine} {median:.3f} ms")
                    if rnd == 0:
                        checks[key] = outputs_compared(out_dirs["hetsched"], out_dirs["ort"])
                    print(f"round {rnd + 1}/{args.rounds}  {job['name']:18s} {job['variant']:12s} threads {t}  "
                          + ", ".join(line), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)
    rows = []
    for (name, variant, t), by_engine in times.items():
        h, o = by_engine["hetsched"], by_engine["ort"]
        cosine, max_rel = checks[(name, variant, t)]
        rows.append({"model": name, "variant": variant, "threads": t,
                     "hetsched_ms": round(statistics.median(h), 3), "hetsched_spread": f"{min(h):.3f}-{max(h):.3f}",
                     "ort_ms": round(statistics.median(o), 3), "ort_spread": f"{min(o):.3f}-{max(o):.3f}",
                     "ratio": round(statistics.median(h) / statistics.median(o), 3),
                     "cosine_vs_ort": round(cosine, 6), "max_rel_diff_vs_ort": f"{max_rel:.2e}"})
    print(f"\n{'model':18s} {'variant':12s} thr {'hetsched ms':>12s} {'ORT ms':>10s} {'ratio':>6s}  cosine vs ORT")
    for r in rows:
        print(f"{r['model']:18s} {r['variant']:12s} {r['threads']:3d} {r['hetsched_ms']:12.3f} {r['ort_ms']:10.3f} "
              f"{r['ratio']:6.3f}  {r['cosine_vs_ort']:.6f}")
    for variant in dict.fromkeys(r["variant"] for r in rows):
        for t in threads:
            ratios = [r["ratio"] for r in rows if r["variant"] == variant and r["threads"] == t]
            if ratios:
                print(f"{variant} threads {t}: hetsched / ORT geometric mean {geomean(ratios):.3f}, "
                      f"worst {max(ratios):.3f}, {sum(x <= 1.0 for x in ratios)} of {len(ratios)} at most 1.00")
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    comment = (f"hetsched {commit} against ONNX Runtime 1.30.0 (onnxruntime-node, CPU); {args.rounds} rounds x "
               f"{args.iterations} runs ({args.warmup} warm-ups), fresh process each; {cpu_model()}; "
               f"{os.cpu_count()} cores")
    write_csv(args.csv, comment, rows)
    print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
