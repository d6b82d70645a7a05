#!/usr/bin/python3
"""Simulator fidelity: predicted against measured makespans of the same plans.

Method
------
1. Devices.  Two one-core CPU devices (default --devices cpu:0,cpu:1).
2. Profile.  `hetsched profile MODEL` fills a fresh profile database (in the
   work directory) for each model: every fusion unit and every node on each
   device, timed in context, plus the devices' peaks and the hand-over fit
   between the two devices (5 warm-ups, --profile-repeats timed runs).
   Each round re-profiles (--force) before predicting and measuring, so a
   prediction and its measurement are taken minutes apart at most: this VM's
   speed drifts by up to 1.5x, which would otherwise pass for model error.
3. Plans.  Per model: `sequential` on each device alone, `round-robin`, and
   `random` with several seeds (valid plans with many cross-device edges) —
   `hetsched plan ... -o FILE`, so the simulator and the executor get the
   very same plan.
4. Predicted.  `hetsched simulate MODEL --plan FILE --json`: the simulator on
   the combined cost model (measurements first), with co-run interference.
5. Measured.  `hetsched run MODEL --plan FILE --json -n N -w W`.  Within a
   round every plan of the model is simulated and run once, in order.  The
   figures are the medians over R rounds of the predictions and of the p50s;
   the spread is (max - min) of the p50s.
6. Error.  |predicted - measured| / measured per plan; the median and the
   worst over all plans are printed and written with the rows to the CSV.
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile

from bench_common import cpu_model, run, write_csv


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", default="build/hetsched")
    ap.add_argument("--models", default="zoo:googlenet,zoo:inception_v3,zoo:resnet18,zoo:squeezenet1_0,zoo:mobilenet_v2")
    ap.add_argument("--devices", default="cpu:0,cpu:1")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile-repeats", type=int, default=30)
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("-w", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="two models, one random seed, 2 rounds")
    ap.add_argument("--csv", default="bench/results/sim_fidelity.csv")
    args = ap.parse_args()
    if args.quick:
        args.models = "zoo:googlenet,zoo:squeezenet1_0"
        args.seeds = "1"
        args.rounds = 2

    work = tempfile.mkdtemp(prefix="hetsched-fidelity-")
    exe = os.path.join(work, "hetsched")
    shutil.copy(args.hetsched, exe)
    devices = args.devices.split(",")
    rows = []
    for model in args.models.split(","):
        db = os.path.join(work, model.replace(":", "_") + ".db")
        base = ["--devices", args.devices, "--db", db]
        profile = [exe, "profile", model, "-w", "5", "-r", str(args.profile_repeats)] + base
        run(profile)
        plans = {}
        variants = [(f"sequential {d}", ["--scheduler", "sequential", "--sched-param", f"device={d}"]) for d in devices]
        variants.append(("round-robin", ["--scheduler", "round-robin"]))
        variants += [(f"random {s}", ["--scheduler", "random", "--seed", s]) for s in args.seeds.split(",")]
        for name, flags in variants:
            path = os.path.join(work, f"{model.replace(':', '_')}-{name.replace(' ', '_').replace(':', '_')}.json")
            run([exe, "plan", model] + base + flags + ["-o", path])
            plans[name] = {"path": path, "predicted": [], "measured": []}
        for r in range(args.rounds):
            if r > 0:
                run(profile + ["--force"])
            for name, p in plans.items():
                sim_json = p["path"] + ".sim"
                run([exe, "simulate", model, "--plan", p["path"], "--json", sim_json] + base)
                with open(sim_json) as f:
                    p["predicted"].append(json.load(f)["predicted_ms"])
                run_json = p["path"] + ".run"
                run([exe, "run", model, "--plan", p["path"], "-n", str(args.n), "-w", str(args.w), "--json",
                     run_json] + base)
                with open(run_json) as f:
                    p["measured"].append(json.load(f)["p50_ms"])
        for name, p in plans.items():
            predicted = statistics.median(p["predicted"])
            measured = statistics.median(p["measured"])
            error = abs(predicted - measured) / measured
            rows.append({"model": model, "plan": name, "predicted_ms": round(predicted, 3),
                         "measured_p50_ms": round(measured, 3),
                         "measured_spread_ms": round(max(p["measured"]) - min(p["measured"]), 3),
                         "error": round(error, 4)})
            print(f"{model:22} {name:18} predicted {predicted:8.2f} ms  measured {measured:8.2f} ms  "
                  f"error {100 * error:5.1f}%", flush=True)
    errors = [r["error"] for r in rows]
    print(f"\n{len(rows)} plans on {args.devices} ({cpu_model()}): median error {100 * statistics.median(errors):.1f}%, "
          f"worst {100 * max(errors):.1f}%")
    write_csv(args.csv, f"{cpu_model()}, devices {args.devices}, {args.rounds} rounds x -n {args.n} -w {args.w}", rows)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
