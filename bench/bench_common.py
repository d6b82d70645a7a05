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
