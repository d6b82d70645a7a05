#!/usr/bin/python3
"""Every scheduler's plan, predicted and measured, as `hetsched compare --measure` shows them.

Method
------
1. Devices.  --devices cpu:0,cpu:1 (auto gets their union cpu:0-1 too, as
   in a Session).
2. Profile.  `hetsched profile MODEL --devices cpu:0,cpu:1,cpu:0-1` into a
   fresh profile database (in the work directory), once per model, so that
   every prediction reads measured launches.
3. Compare.  `hetsched compare MODEL --measure --json` --rounds times per
   model: every scheduler's plan and each device alone simulated, then run
   in interleaved rounds (each timed run right after an untimed one of the
   same plan).  Per plan, the medians over the repeats of the prediction
   and of the measured p50.
4. Error.  |predicted - measured| / measured per plan (the devices alone
   included); the median and the worst are printed and written with the
   rows and the machine to the CSV.
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
    ap.add_argument("--models", default="zoo:googlenet,zoo:inception_v3,zoo:mobilenet_v2")
    ap.add_argument("--devices", default="cpu:0,cpu:1")
    ap.add_argument("--union", default="cpu:0-1", help="the union device profiled beside them")
    ap.add_argument("--repeats", type=int, default=3, help="compare runs per model")
    ap.add_argument("-n", type=int, default=10, help="measured rounds per compare")
    ap.add_argument("--csv", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "compare_fidelity.csv"))
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="hetsched-compare-fidelity-")
    exe = os.path.join(work, "hetsched")
    shutil.copy(args.hetsched, exe)
    rows = []
    for model in args.models.split(","):
        db = os.path.join(work, model.replace(":", "_") + ".db")
        run([exe, "profile", model, "--devices", f"{args.devices},{args.union}", "--db", db])
        plans = {}
        for _ in range(args.repeats):
            out = os.path.join(work, "compare.json")
            run([exe, "compare", model, "--devices", args.devices, "--db", db, "--measure", "-n", str(args.n),
                 "--json", out])
            with open(out) as f:
                c = json.load(f)
            entries = [(f"{b['device']} alone", b) for b in c["sequential"]]
            entries += [(s["name"], s) for s in c["schedulers"]]
            for name, e in entries:
                if e.get("predicted_ms") is None or e.get("measured_p50_ms") is None:
                    continue
                p = plans.setdefault(name, {"predicted": [], "measured": []})
                p["predicted"].append(e["predicted_ms"])
                p["measured"].append(e["measured_p50_ms"])
        for name, p in plans.items():
            predicted = statistics.median(p["predicted"])
            measured = statistics.median(p["measured"])
            error = abs(predicted - measured) / measured
            rows.append({"model": model, "plan": name, "predicted_ms": round(predicted, 3),
                         "measured_p50_ms": round(measured, 3),
                         "measured_spread_ms": round(max(p["measured"]) - min(p["measured"]), 3),
                         "error": round(error, 4)})
            print(f"{model:20} {name:18} predicted {predicted:8.2f} ms  measured {measured:8.2f} ms  "
                  f"error {100 * error:5.1f}%", flush=True)
    errors = [r["error"] for r in rows]
    summary = (f"{len(rows)} plans on {args.devices} ({cpu_model()}): median error "
               f"{100 * statistics.median(errors):.1f}%, worst {100 * max(errors):.1f}%")
    print("\n" + summary)
    write_csv(args.csv, f"{summary}; {args.repeats} compares x -n {args.n} per model", rows)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
