"""The `hetsched` command of an installed package (`pip install .`): runs
the CLI that setup.py installed beside the extension, hetsched/bin/hetsched.
"""
import os
import sys


def main():
    cli = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "hetsched")
    if not os.access(cli, os.X_OK):
        sys.exit(f"hetsched: {cli} is missing: this package was not installed by setup.py (pip install .)")
    # The process becomes the CLI: its exit code, signals and streams are the
    # command's own.
    os.execv(cli, [cli, *sys.argv[1:]])
