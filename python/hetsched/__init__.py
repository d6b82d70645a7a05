"""hetsched: run ONNX models across heterogeneous devices.

    import hetsched
    s = hetsched.Session("model.onnx", devices="cpu:0,cpu:1", scheduler="auto")
    outputs = s.run({"input": array})

See docs/python.md for the whole API.
"""
import os as _os


def _libgomp_loaded():
    try:
        with open("/proc/self/maps") as maps:
            return "libgomp" in maps.read()
    except OSError:
        return False


# libgomp, which the CPU kernels run on, reads these once, when it is loaded
# (with the extension below, unless another package loaded it first): active
# waits keep a multi-core device fast while several sessions live side by
# side (see prefer_active_openmp_waits in include/hetsched/device.h). A
# choice already made stays; the environment is given back as it was, so
# that later processes and OpenMP runtimes do not inherit them.
_set_waits = (
    "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ and not _libgomp_loaded()
)
if _set_waits:
    _os.environ["OMP_WAIT_POLICY"] = "ACTIVE"
    _os.environ["GOMP_SPINCOUNT"] = "30000"

try:
    from ._hetsched import (  # noqa: E402, F401
        Error,
        InvalidInputError,
        Session,
        UsageError,
        devices,
        export_model,
        machine,
        quantize,
        schedulers,
        zoo_models,
    )
finally:
    if _set_waits:
        del _os.environ["OMP_WAIT_POLICY"]
        del _os.environ["GOMP_SPINCOUNT"]

try:
    from ._hetsched import __version__  # noqa: F401
except ImportError:  # built without a version
    pass

__all__ = [
    "Error",
    "InvalidInputError",
    "Session",
    "UsageError",
    "devices",
    "export_model",
    "machine",
    "quantize",
    "schedulers",
    "zoo_models",
]
