#!/usr/bin/python3
"""auto's local search: the time of one evaluation, and what the default budget buys.

Method
------
1. Cases.  MODEL@PLATFORM pairs (--cases): zoo models planned for the
   platform files in platforms/, so every figure is simulated work on this
   machine's CPU, with no device measured.
2. Time per evaluation.  `hetsched plan zoo:MODEL --platform FILE --scheduler
   auto` with the candidates limited to opara (--candidates; the fastest to
   plan, so that the candidates' own time adds little noise), a wall-clock
   budget far out of reach, and max_evals=0, then max_evals=N (--evals).
   Each prints its planning time ("planned in X ms"); (t_N - t_0) / N is the
   time of one evaluation of the local search (a plan built and simulated).
   The two runs alternate, case after case, for R rounds (--rounds); the
   figure is the median over the rounds, with the min..max.
3. Quality.  The same command with auto's defaults (every candidate, the
   700 ms budget): its predicted makespan and how many evaluations the search
   made (from `hetsched explain`'s notes), once per case.
4. A/B.  --baseline BIN (an earlier build) is measured in the same rounds,
   right after each of this build's runs, and the ratio of the medians is
   printed.
"""
import argparse
import csv
import json
import os
import re
import statistics
import sys
import tempfile

from schedulers import machine, run as run_with

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd):
    return run_with(cmd, None, 600)


def plan(exe, model, platform_file, out, params):
    cmd = [exe, "plan", f"zoo:{model}", "--platform", platform_file, "--scheduler", "auto", "-o", out]
    for p in params:
        cmd += ["--sched-param", p]
    printed = run(cmd)
    planned = re.search(r"planned in ([0-9.]+) ms", printed)
    if not planned:
        sys.exit(f"no planning time in: {printed}")
    return float(planned.group(1))


def search_note(exe, out, platform_file):
    explained = run([exe, "explain", out, "--platform", platform_file])
    note = re.search(r"auto: local search from .*?: \d+ of (\d+) changes kept", explained)
    return int(note.group(1)) + 1 if note else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetsched", default="build/hetsched")
    ap.add_argument("--baseline", help="another hetsched binary (an earlier build) measured in the same rounds, "
                                       "interleaved")
    ap.add_argument("--baseline-name", default="baseline", help="what the baseline is, for the tables (a commit)")
    ap.add_argument("--cases", default="nasnet@desktop-gpu,inception_v3@desktop-gpu,randwire@cpu-dsa,bert@phone-soc")
    ap.add_argument("--candidates", default="opara")
    ap.add_argument("--evals", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "auto_search.csv"))
    ap.add_argument("--quick", action="store_true", help="one case, one round, 200 evaluations (a smoke test)")
    args = ap.parse_args()
    if args.quick:
        args.cases, args.rounds, args.evals = "googlenet@desktop-gpu", 1, 200
    cases = [c.split("@") for c in args.cases.split(",")]
    fixed = [f"schedulers={args.candidates}", "budget_ms=1000000"]

    binaries = [("hetsched", args.hetsched)] + ([(args.baseline_name, args.baseline)] if args.baseline else [])
    per_eval = {(model, plat, name): [] for model, plat in cases for name, _ in binaries}
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "plan.json")
        for _ in range(args.rounds):
            for model, plat in cases:
                platform_file = os.path.join(ROOT, "platforms", f"{plat}.json")
                for name, exe in binaries:
                    t0 = plan(exe, model, platform_file, out, fixed + ["max_evals=0"])
                    tn = plan(exe, model, platform_file, out, fixed + [f"max_evals={args.evals}"])
                    per_eval[(model, plat, name)].append((tn - t0) / args.evals)
        rows = []
        for model, plat in cases:
            platform_file = os.path.join(ROOT, "platforms", f"{plat}.json")
            for name, exe in binaries:
                ms = plan(exe, model, platform_file, out, [])
                with open(out) as f:
                    predicted = json.load(f)["predicted_ms"]
                times = per_eval[(model, plat, name)]
                rows.append({
                    "model": model,
                    "platform": plat,
                    "binary": name,
                    "ms_per_eval_median": round(statistics.median(times), 4),
                    "ms_per_eval_min": round(min(times), 4),
                    "ms_per_eval_max": round(max(times), 4),
                    "rounds": args.rounds,
                    "evals": args.evals,
                    "default_planning_ms": round(ms, 1),
                    "default_search_evals": search_note(exe, out, platform_file),
                    "default_predicted_ms": round(predicted, 4),
                })

    m = machine(args.hetsched, None)
    header = (f"# machine: {m['cpu']}, {m['cores']} cores, {m['date']}, hetsched {m['commit']}; simulated work only "
              f"(platform files); candidates {args.candidates} for the time per evaluation; default_search_evals: "
              f"the evaluations of the search auto kept, with its defaults"
              + (f"; baseline: {args.baseline_name}, in the same rounds" if args.baseline else ""))
    print(header)
    print(f"{'case':<28} {'binary':<14} {'ms/eval median [min..max]':<28} {'search evals':>13} {'planning ms':>12} "
          f"{'predicted ms':>13}")
    for r in rows:
        spread = f"{r['ms_per_eval_median']:.4f} [{r['ms_per_eval_min']:.4f}..{r['ms_per_eval_max']:.4f}]"
        print(f"{r['model'] + '@' + r['platform']:<28} {r['binary']:<14} {spread:<28} {r['default_search_evals']:>13} "
              f"{r['default_planning_ms']:>12.1f} {r['default_predicted_ms']:>13.4f}")
    if args.baseline:
        for model, plat in cases:
            ours, base = (statistics.median(per_eval[(model, plat, n)]) for n in ("hetsched", args.baseline_name))
            print(f"{model}@{plat}: {args.baseline_name}'s evaluation takes {base / ours:.2f}x this build's")
    if not args.quick:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w", newline="") as f:
            f.write(header + "\n")
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
