#!/usr/bin/python3
"""Throughput mode against one request at a time on both cores.

Method
------
1. Devices.  Throughput mode gets the two one-core devices
   (`run --mode throughput --devices cpu:0,cpu:1`): its Session predicts
   each flow (each device alone, their union cpu:0-1 alone, the two side by
   side) and measures the best ones, keeping side by side only when it
   serves clearly more (docs/throughput.md).  The baseline is one request
   at a time on both cores (`run --devices cpu:0-1`), its rate 1000 / p50.
2. Profile.  `hetsched profile MODEL --devices cpu:0,cpu:1,cpu:0-1` fills a
   fresh profile database (in the work directory) for each model, once.
3. Rounds.  In each round, per model, interleaved and in an order rotated
   from round to round: the throughput run (a new process each time, its
   own choice included; N requests, one per worker in flight) and the
   baseline (N timed runs).  N gives each run about two seconds.
4. Figures.  Per model the median over the rounds of each rate; ratio =
   throughput mode / baseline (above 1: more requests served).  Spread =
   max - min of throughput mode's rates.  The geometric mean of the ratios
   and the worst are printed and written, with the rows and the machine, to
   the CSV.

Models: the built-in zoo CNNs and a two-layer BERT encoder by default;
--torchvision exports torchvision models with random weights
(bench/auto_vs_single.py's exporter, needs python3-torch) and adds them.
Run on a quiet machine: nothing else running.
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile

from bench_common import cpu_model, geomean, model_args, run, write_csv

HERE = os.path.dirname(os.path.abspath(__file__))

ZOO = ("zoo:mobilenet_v2,zoo:squeezenet1_0,zoo:resnet18,zoo:resnet50,zoo:googlenet,zoo:inception_v3,"
       "zoo:bert?layers=2")


def model_name(model):
    if model.endswith(".onnx"):
        return os.path.splitext(os.path.basename(model))[0]
    return model.replace("?", "_").replace("=", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", default="build/hetsched")
    ap.add_argument("--models", default=ZOO, help="comma-separated models (default: %(default)s)")
    ap.add_argument("--torchvision", default="",
                    help="comma-separated torchvision models to export and add, e.g. resnet50,densenet121")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="length of each timed run")
    ap.add_argument("--quick", action="store_true", help="squeezenet1_0 only, 1 round, short runs")
    ap.add_argument("--csv", default=os.path.join(HERE, "results", "throughput.csv"))
    ap.add_argument("--keep", help="export the torchvision models into this folder and keep them there")
    args = ap.parse_args()
    if args.quick:
        args.models, args.rounds, args.seconds = "zoo:squeezenet1_0", 1, 0.2

    work = tempfile.mkdtemp(prefix="hetsched-throughput-")
    exe = os.path.join(work, "hetsched")
    shutil.copy(args.hetsched, exe)
    models = [m for m in args.models.split(",") if m]
    if args.torchvision:
        from auto_vs_single import export_torchvision
        models += export_torchvision(args.torchvision, args.keep or work)
    rows = []
    out_json = os.path.join(work, "run.json")
    for model in models:
        name = model_name(model)
        margs, _ = model_args(model)
        db = os.path.join(work, name.replace(":", "_") + ".db")
        run([exe, "profile"] + margs + ["--devices", "cpu:0,cpu:1,cpu:0-1", "--db", db])
        run([exe, "run"] + margs + ["--devices", "cpu:0-1", "--db", db, "-n", "5", "--json", out_json])
        with open(out_json) as f:
            p50 = json.load(f)["p50_ms"]
        n = max(10, int(args.seconds * 1000 / p50))
        variants = [("throughput", ["--mode", "throughput", "--devices", "cpu:0,cpu:1"]),
                    ("baseline", ["--devices", "cpu:0-1"])]
        rates = {v: [] for v, _ in variants}
        p99s, flows = [], []
        for r in range(args.rounds):
            for k in range(len(variants)):
                variant, flags = variants[(k + r) % len(variants)]
                run([exe, "run"] + margs + flags + ["--db", db, "-n", str(n), "-w", "2", "--json", out_json])
                with open(out_json) as f:
                    j = json.load(f)
                if variant == "throughput":
                    rates[variant].append(j["throughput_per_s"])
                    p99s.append(j["p99_ms"])
                    flows.append(j["flow"])
                else:
                    rates[variant].append(1000 / j["p50_ms"])
        med = {v: statistics.median(t) for v, t in rates.items()}
        ratio = med["throughput"] / med["baseline"]
        side = sum(f.startswith("side by side") for f in flows)
        rows.append({"model": name, "throughput_per_s": round(med["throughput"], 2),
                     "throughput_spread_per_s": round(max(rates["throughput"]) - min(rates["throughput"]), 2),
                     "throughput_p99_ms": round(statistics.median(p99s), 3),
                     "baseline_per_s": round(med["baseline"], 2), "ratio": round(ratio, 4),
                     "side_by_side_chosen": f"{side}/{len(flows)}"})
        print(f"{name:22} throughput mode {med['throughput']:8.2f}/s  cpu:0-1 one at a time {med['baseline']:8.2f}/s"
              f"  ratio {ratio:.3f}  (side by side chosen in {side} of {len(flows)} runs)", flush=True)
    ratios = [r["ratio"] for r in rows]
    mean = geomean(ratios)
    print(f"\n{len(rows)} models ({cpu_model()}): throughput mode / one request at a time on cpu:0-1: "
          f"geometric mean {mean:.3f}, worst {min(ratios):.3f}, best {max(ratios):.3f}")
    write_csv(args.csv, f"{cpu_model()}, {os.cpu_count()} cores; {args.rounds} interleaved rounds of "
              f"~{args.seconds} s; geometric mean {mean:.3f}, worst {min(ratios):.3f}", rows)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
