"""Helpers the benchmark scripts share."""
import platform
import subprocess
import sys


def run(cmd):
    """stdout of cmd; exits with its stderr when it fails."""
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed ({result.returncode}): {' '.join(cmd)}\n{result.stderr}")
    return result.stdout


def cpu_model():
    """The CPU's model name, as /proc/cpuinfo gives it."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def geomean(values):
    """The geometric mean of positive values."""
    import math
    return math.exp(sum(math.log(x) for x in values) / len(values))


def model_args(model):
    """A model with zoo parameters after '?', joined by '&', as the CLI's
    arguments and as a dict: 'zoo:bert?layers=2' -> (['zoo:bert', '--param',
    'layers=2'], {'layers': '2'})."""
    name, _, text = model.partition("?")
    params = [p for p in text.split("&") if p]
    args = [name]
    for p in params:
        args += ["--param", p]
    return args, dict(p.split("=", 1) for p in params)


def write_csv(path, comment, rows):
    """rows (dicts with the same keys) to the CSV at path, after one '# comment' line."""
    import csv
    import os
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write(f"# {comment}\n")
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)


def timed(session, feeds, n):
    """The median of n runs of a hetsched Session, in ms."""
    import statistics
    import time
    times = []
    for _ in range(n):
        start = time.perf_counter()
        session.run(feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def compared(a, b):
    """Cosine similarity of two arrays (flattened), and the largest difference
    relative to b's largest value."""
    import numpy as np
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))), float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
