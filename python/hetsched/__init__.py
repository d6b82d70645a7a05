"""hetsched: run ONNX models across heterogeneous devices.

    import hetsched
    s = hetsched.Session("model.onnx", devices="cpu:0,cpu:1", scheduler="auto")
    outputs = s.run({"input": array})

See docs/python.md for the whole API.
"""
from ._hetsched import (  # noqa: F401
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
