"""hetsched: run ONNX models across heterogeneous devices.

    import hetsched
    s = hetsched.Session("model.onnx", devices="cpu:0,cpu:1", scheduler="auto")
    outputs = s.run({"input": array})

See docs/python.md for the whole API.
"""
import os as _os

# libgomp, which the CPU kernels run on, reads these once, when the
# extension below loads it: active waits keep a multi-core device fast while
# several sessions live side by side (see prefer_active_openmp_waits in
# include/hetsched/device.h). A choice already made in the environment stays.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "ACTIVE"
    _os.environ["GOMP_SPINCOUNT"] = "300000"

from ._hetsched import (  # noqa: E402, F401
    Error,
    InvalidInputError,
    Session,
    UsageError,
    devices,
    export_model,
    machine,
    schedulers,
    zoo_models,
)

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
    "schedulers",
    "zoo_models",
]
