"""`pip install .` and `pip wheel .`: the Python package, built by CMake.

The extension, the engine's library, the CLI and the platform files are
built with the system's CMake and Debian's libraries (scripts/setup-deps.sh)
and installed into the package by CMake's `python_package` install component
(python/CMakeLists.txt):

    hetsched/__init__.py, dask.py, _cli.py
    hetsched/_hetsched.cpython-*.so     RPATH $ORIGIN/lib
    hetsched/lib/libhetsched.so.*
    hetsched/bin/hetsched               the CLI, run by the `hetsched` command
    hetsched/share/hetsched/platforms/*.json

Offline: there is no pyproject.toml on purpose, so that pip builds with the
setuptools and wheel already installed (Debian's python3-setuptools,
python3-wheel) instead of downloading them into an isolated environment.
Newer pips that always isolate need `--no-build-isolation`.

Environment:
    HETSCHED_CMAKE_BUILD_DIR   build in (and install from) this CMake build
                               folder, as it is configured (a developer's
                               build/, which makes the install take seconds);
                               by default a Release build of its own under
                               build/python-package/
    HETSCHED_CMAKE_ARGS        more arguments for a build of its own
                               (e.g. "-DHETSCHED_WITH_CUDA=OFF")
    HETSCHED_JOBS              parallel build jobs (default: every core)
"""
import os
import re
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))
SCRATCH = os.path.join("build", "python-package")
os.makedirs(os.path.join(SOURCE_DIR, SCRATCH), exist_ok=True)


def project_version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        match = re.search(r"project\(hetsched VERSION ([0-9.]+)", f.read())
    if not match:
        sys.exit("setup.py: CMakeLists.txt has no 'project(hetsched VERSION ...)'")
    return match.group(1)


class CMakeBuild(build_ext):
    """Builds the one extension, hetsched._hetsched, and everything beside it."""

    def run(self):
        build_dir = os.environ.get("HETSCHED_CMAKE_BUILD_DIR")
        if build_dir:
            build_dir = os.path.abspath(build_dir)
            if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
                sys.exit(f"setup.py: HETSCHED_CMAKE_BUILD_DIR={build_dir} is not a configured CMake build folder")
        else:
            build_dir = os.path.join(SOURCE_DIR, SCRATCH, "cmake")
            self.cmake("configure", "-S", SOURCE_DIR, "-B", build_dir, "-G", "Ninja",
                       "-DCMAKE_BUILD_TYPE=Release", "-DHETSCHED_BUILD_TESTS=OFF",
                       "-DHETSCHED_BUILD_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}",
                       *shlex.split(os.environ.get("HETSCHED_CMAKE_ARGS", "")))
        jobs = os.environ.get("HETSCHED_JOBS", str(os.cpu_count() or 1))
        self.cmake("build", "--build", build_dir, "--target", "hetsched_python", "hetsched_cli", "-j", jobs)
        # Into the folder setuptools packs (build/lib... or, for an editable
        # install, the source tree's python/): hetsched/ lands inside it.
        prefix = os.path.abspath(self.build_lib)
        self.cmake("install", "--install", build_dir, "--component", "python_package", "--prefix", prefix)
        # A wheel stores a symbolic link as a second copy of its target: the
        # library moves onto its SONAME link (libhetsched.so.0.1 ->
        # libhetsched.so.0.1.0), the one name that is loaded.
        for folder, _, names in os.walk(os.path.join(prefix, "hetsched")):
            for name in names:
                link = os.path.join(folder, name)
                if os.path.islink(link):
                    os.replace(os.path.realpath(link), link)

    def cmake(self, what, *args):
        command = ["cmake", *args]
        print(" ".join(shlex.quote(a) for a in command), flush=True)
        try:
            subprocess.run(command, check=True)
        except FileNotFoundError:
            sys.exit("setup.py: cmake not found (scripts/setup-deps.sh installs it)")
        except subprocess.CalledProcessError as e:
            sys.exit(f"setup.py: cmake {what} failed (exit code {e.returncode})")

    # The files are CMake's: nothing for setuptools to compile or copy.
    def get_outputs(self):
        return []


setup(
    name="hetsched",
    version=project_version(),
    description="Run ONNX models across a machine's heterogeneous processing units",
    long_description=open(os.path.join(SOURCE_DIR, "README.md")).read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    install_requires=["numpy"],
    extras_require={"dask": ["dask[array]", "distributed"]},
    # The package's files come from CMake's install (above); setuptools
    # only needs to know that it is a platform-specific package.
    packages=[],
    ext_modules=[Extension("hetsched._hetsched", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    entry_points={"console_scripts": ["hetsched = hetsched._cli:main"]},
    zip_safe=False,
    # setuptools' scratch folders next to CMake's, not in the source root.
    options={"build": {"build_base": os.path.join(SCRATCH, "setuptools")}, "egg_info": {"egg_base": SCRATCH}},
)
