#!/usr/bin/python3
"""auto on real cores against the best single device.

Method
------
1. Devices.  auto gets two one-core devices (--devices cpu:0,cpu:1); a
   Session adds the union device (cpu:0-1) beside them, plans with auto and
   settles by measurement among auto's plan, two runners-up and each device
   alone (docs/schedulers.md, "auto's measured choice").
2. Profile.  `hetsched profile MODEL --devices cpu:0,cpu:1,cpu:0-1` fills a
   fresh profile database (in the work directory) for each model, once.
3. Rounds.  In each round, per model, interleaved: `run --scheduler auto`
   (its own measured choice included, in a new process each time), then each
   single device alone (`run --devices cpu:0-1`, `run --devices cpu:0`),
   -n N timed runs each.  The order of the three rotates from round to round.
4. Figures.  Per model the median over the rounds of each p50; the best
   single device is the one with the lower median; ratio = auto / best
   (below 1: auto faster).  Spread = max - min of auto's p50s.  The
   geometric mean of the ratios and the worst are printed and written, with
   the rows and the machine, to the CSV.

Models: the built-in zoo by default; --torchvision exports torchvision
models with random weights (bench/cpu_vs_pytorch.py's exporter, needs
python3-torch) and adds them.  Run on a quiet machine: nothing else running.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

from bench_common import cpu_model, geomean, run, write_csv

HERE = os.path.dirname(os.path.abspath(__file__))

ZOO = "zoo:googlenet,zoo:inception_v3,zoo:mobilenet_v2,zoo:resnet18,zoo:resnet50,zoo:squeezenet1_0,zoo:nasnet,zoo:randwire"




def export_main(out, names):
    """In a child process: each torchvision model to OUT/NAME.onnx (random
    weights, BatchNorm statistics from a random batch, opset 13), as
    bench/cpu_vs_pytorch.py exports them."""
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import torchvision
    from cpu_vs_pytorch import calibrate_batch_norm, input_shape
    os.makedirs(out, exist_ok=True)
    for name in names.split(","):
        torch.manual_seed(0)
        kwargs = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            kwargs.update(aux_logits=False, init_weights=True)
        model = getattr(torchvision.models, name)(**kwargs).eval()
        calibrate_batch_norm(model, input_shape(name))
        x = torch.randn(*input_shape(name))
        with torch.no_grad():
            torch.onnx.export(model, x, os.path.join(out, name + ".onnx"), opset_version=13,
                              input_names=["input"], output_names=["output"])
        print(f"exported {name}", file=sys.stderr, flush=True)


def export_torchvision(names, work):
    """[path] of each torchvision model exported to ONNX (random weights)."""
    out = os.path.join(work, "torchvision")
    run([sys.executable, os.path.abspath(__file__), "--export", out, "--torchvision", names])
    return [os.path.join(out, name + ".onnx") for name in names.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", default="build/hetsched")
    ap.add_argument("--models", default=ZOO, help="comma-separated models (default: %(default)s)")
    ap.add_argument("--torchvision", default="",
                    help="comma-separated torchvision models to export and add, e.g. resnet50,densenet121")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="squeezenet1_0 only, 1 round, -n 3")
    ap.add_argument("--csv", default=os.path.join(HERE, "results", "auto_vs_single.csv"))
    ap.add_argument("--keep", help="export the torchvision models into this folder and keep them there")
    ap.add_argument("--export", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.export:
        export_main(args.export, args.torchvision)
        return
    if args.quick:
        args.models, args.rounds, args.n = "zoo:squeezenet1_0", 1, 3

    work = tempfile.mkdtemp(prefix="hetsched-auto-vs-single-")
    exe = os.path.join(work, "hetsched")
    shutil.copy(args.hetsched, exe)
    models = [m for m in args.models.split(",") if m]
    if args.torchvision:
        models += export_torchvision(args.torchvision, args.keep or work)
    variants = [("auto", ["--devices", "cpu:0,cpu:1", "--scheduler", "auto"]),
                ("cpu:0-1", ["--devices", "cpu:0-1"]),
                ("cpu:0", ["--devices", "cpu:0"])]
    rows = []
    for model in models:
        name = os.path.splitext(os.path.basename(model))[0] if model.endswith(".onnx") else model
        db = os.path.join(work, name.replace(":", "_") + ".db")
        run([exe, "profile", model, "--devices", "cpu:0,cpu:1,cpu:0-1", "--db", db])
        times = {v: [] for v, _ in variants}
        choices = []
        for r in range(args.rounds):
            for k in range(len(variants)):
                variant, flags = variants[(k + r) % len(variants)]
                out_json = os.path.join(work, "run.json")
                stdout = run([exe, "run", model, "--db", db, "-n", str(args.n), "-w", "2", "--json", out_json] + flags)
                with open(out_json) as f:
                    times[variant].append(json.load(f)["p50_ms"])
                if variant == "auto":
                    choices.append(next((l for l in stdout.splitlines() if l.startswith("auto: ")), ""))
        med = {v: statistics.median(t) for v, t in times.items()}
        best = min(("cpu:0-1", "cpu:0"), key=lambda v: med[v])
        ratio = med["auto"] / med[best]
        kept = sum("keeping auto's" in c for c in choices)
        rows.append({"model": name, "auto_p50_ms": round(med["auto"], 3),
                     "auto_spread_ms": round(max(times["auto"]) - min(times["auto"]), 3),
                     "cpu0_1_p50_ms": round(med["cpu:0-1"], 3), "cpu0_p50_ms": round(med["cpu:0"], 3),
                     "best_single": best, "ratio": round(ratio, 4), "auto_kept_its_plan": f"{kept}/{len(choices)}"})
        print(f"{name:22} auto {med['auto']:8.3f} ms  cpu:0-1 {med['cpu:0-1']:8.3f} ms  cpu:0 {med['cpu:0']:8.3f} ms"
              f"  auto/best {ratio:.3f}  (auto kept a multi-device plan in {kept} of {len(choices)} runs)",
              flush=True)
    ratios = [r["ratio"] for r in rows]
    mean = geomean(ratios)
    print(f"\n{len(rows)} models ({cpu_model()}): auto / best single device: geometric mean {mean:.3f}, "
          f"worst {max(ratios):.3f}, best {min(ratios):.3f}")
    write_csv(args.csv, f"{cpu_model()}, {os.cpu_count()} cores; {args.rounds} interleaved rounds x -n {args.n}; "
              f"geometric mean {mean:.3f}, worst {max(ratios):.3f}", rows)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
