"""Batch inference on a Dask cluster (Debian's python3-distributed).

    import dask.array as da
    from distributed import Client
    import hetsched.dask

    client = Client("tcp://scheduler:8786")       # or Client(LocalCluster(...))
    hetsched.dask.pin_workers(client)             # workers sharing a machine: cores of their own
    images = da.from_zarr(...)                    # any dask array, chunked along axis 0
    out = hetsched.dask.infer("model.onnx", {"input": images}, scheduler="auto")
    labels = out["output"].argmax(axis=1).compute()

Each worker process loads and plans the model once, for its own devices and
with its own profile database (a session per worker, cached by model and
options), and runs every chunk it is given on it. See docs/scale-out.md.
"""
import concurrent.futures
import functools
import math
import operator
import os
import socket
import threading

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

import hetsched

__all__ = ["infer", "pin_workers"]

# This process's sessions, by (model, options): on a worker, the sessions its
# chunks ran on. A session is made once, by the first chunk that needs it.
_sessions = {}
_sessions_lock = threading.Lock()


def infer(model, inputs, **session_options):
    """Runs `model` on every row of `inputs`, lazily, as a Dask graph.

    model: an .onnx path (readable by every worker) or "zoo:NAME".
    inputs: dict input name -> dask array (a numpy array is taken as one
        chunk) whose axis 0 is the batch; all inputs have the same number of
        rows, and are rechunked along axis 0 to the first dask array's
        chunks (and to one chunk along every other axis).
    session_options: the keyword arguments of hetsched.Session (devices,
        scheduler, shapes, params, db, precision, mode, ...), used by every
        worker's session.

    Returns a dict output name -> dask array, chunked along axis 0 as the
    inputs. A model whose batch dim is free runs each chunk in one run; a
    model with a fixed batch B runs a chunk B rows at a time (chunks must then
    be multiples of B), side by side on the flow's workers with
    mode="throughput". The model's inputs are checked here (names, dtypes,
    ranks and fixed dims: hetsched.InvalidInputError); errors on a worker
    come back as hetsched's exceptions naming the worker and the chunk.
    """
    if not isinstance(inputs, dict) or not inputs:
        raise _usage("hetsched.dask.infer: inputs must be a non-empty dict name -> dask array")
    # The model's signature, without planning: what a worker's session will
    # expect (shapes and params fix dims; nothing else changes them).
    signature = hetsched.Session(model, reference=True, shapes=session_options.get("shapes"),
                                 params=session_options.get("params"))
    names = [name for name, _, _ in signature.inputs]
    unknown = sorted(set(inputs) - set(names))
    missing = [name for name in names if name not in inputs]
    if unknown or missing:
        what = f"unknown input '{unknown[0]}'" if unknown else f"input '{missing[0]}' is missing"
        raise _invalid_input(f"{model}: {what} (the model's inputs: {', '.join(names)})")

    given = [inputs[name] for name in names]
    arrays = [_as_dask_array(value) for value in given]
    batch = _batch_of(model, signature.inputs, arrays)
    rows = arrays[0].shape[0]
    for name, array in zip(names, arrays):
        if array.shape[0] != rows:
            raise _invalid_input(
                f"{model}: input '{name}' has {array.shape[0]} rows, input '{names[0]}' {rows}")
    # The first dask array's row chunks (numpy arrays come as one chunk).
    lead = next((i for i, value in enumerate(given) if isinstance(value, da.Array)), 0)
    row_chunks = arrays[lead].chunks[0]
    if any(math.isnan(c) for c in row_chunks):
        raise _usage(
            f"hetsched.dask.infer: input '{names[lead]}' has unknown chunk sizes (call compute_chunk_sizes() first)")
    arrays = [a.rechunk((row_chunks,) + tuple(-1 for _ in a.shape[1:])) for a in arrays]
    if batch is not None:
        for index, size in enumerate(row_chunks):
            if size % batch:
                raise _invalid_input(
                    f"{model}: chunk {index} has {size} rows; the model runs {batch} rows at a time "
                    f"(rechunk the inputs to multiples of {batch})")

    token = tokenize(model, sorted(session_options.items()), *arrays)
    run_name = f"hetsched-infer-{token}"
    run_chunk = functools.partial(_run_chunk, model, session_options, tuple(names), batch)
    first_rows = np.cumsum((0,) + row_chunks[:-1])
    run_layer = {
        (run_name, i): (run_chunk, i, int(first_rows[i]), *[(a.name, i) + (0,) * (a.ndim - 1) for a in arrays])
        for i in range(len(row_chunks))
    }
    graph = HighLevelGraph.from_collections(run_name, run_layer, dependencies=arrays)

    outputs = {}
    for name, dtype, shape in signature.outputs:
        _check_batched_output(model, name, shape, batch)
        out_name = f"hetsched-{name}-{token}"
        trailing = tuple(0 for _ in shape[1:])
        layer = {(out_name, i) + trailing: (operator.getitem, (run_name, i), name) for i in range(len(row_chunks))}
        # A free trailing dim (a sequence length) is known once a chunk ran.
        chunks = (row_chunks,) + tuple((math.nan if d is None else d,) for d in shape[1:])
        out_graph = HighLevelGraph({**graph.layers, out_name: layer},
                                   {**graph.dependencies, out_name: {run_name}})
        outputs[name] = da.Array(out_graph, out_name, chunks, dtype=np.dtype(dtype))
    return outputs


def pin_workers(client, cores_per_worker=None):
    """Gives each worker process of `client`'s cluster CPU cores of its own.

    Workers on one machine split the cores they may use (their affinity
    mask) into disjoint groups, `cores_per_worker` each (default: as many as
    divide evenly), in the order of their addresses; every thread of a
    worker, and every thread it starts later, runs on its group. Sessions a
    worker made before are dropped, so that the next chunk plans for its
    group (devices "cpu", the default, are the cores a process may use).
    Call it before infer(); a worker that joins or restarts later runs on
    every core until it is called again. Returns {worker address: cores}.
    """
    found = client.run(_host_and_cores)
    by_host = {}
    for address, (host, cores) in sorted(found.items()):
        by_host.setdefault(host, []).append((address, cores))
    groups = {}
    for host, workers in by_host.items():
        cores = sorted(set().union(*(set(c) for _, c in workers)))
        per = cores_per_worker or len(cores) // len(workers)
        if per < 1 or per * len(workers) > len(cores):
            raise _usage(
                f"hetsched.dask.pin_workers: {len(workers)} workers on {host} cannot have "
                f"{cores_per_worker or 'one or more'} cores each: they may use {len(cores)} cores")
        for k, (address, _) in enumerate(workers):
            groups[address] = cores[k * per:(k + 1) * per]
    for address, cores in groups.items():
        client.run(_pin_process, cores, workers=[address])
    return groups


def _usage(message):
    error = hetsched.UsageError(message)
    error.code = "usage"  # as the engine's own errors carry it
    return error


def _invalid_input(message):
    error = hetsched.InvalidInputError(message)
    error.code = "invalid_input"
    return error


def _as_dask_array(value):
    return value if isinstance(value, da.Array) else da.from_array(np.asarray(value), chunks=-1)


def _batch_of(model, declared, arrays):
    """The rows per run: None when every input's batch dim is free, else the
    fixed batch they share. Checks dtypes, ranks and fixed trailing dims."""
    batches = set()
    for (name, dtype, shape), array in zip(declared, arrays):
        if array.dtype != np.dtype(dtype):
            raise _invalid_input(f"{model}: input '{name}': expected {dtype}, got {array.dtype}")
        if shape is None:
            continue
        if len(shape) == 0:
            raise _invalid_input(f"{model}: input '{name}' is a scalar: it has no batch axis")
        if array.ndim != len(shape) or any(
                d is not None and d != n for d, n in zip(shape[1:], array.shape[1:])):
            expected = "x".join("?" if d is None else str(d) for d in shape)
            raise _invalid_input(
                f"{model}: input '{name}': expected rows of {expected}, got {'x'.join(map(str, array.shape))}")
        batches.add(shape[0])
    if len(batches) > 1:
        raise _invalid_input(
            f"{model}: the inputs' batch dims differ ({', '.join(sorted(map(str, batches)))}): "
            "hetsched.dask runs models whose inputs share axis 0")
    return batches.pop() if batches else None


def _check_batched_output(model, name, shape, batch):
    if shape is None:
        raise _invalid_input(f"{model}: output '{name}' has no known rank: give its inputs' shapes (shapes=...)")
    if len(shape) == 0 or shape[0] != batch:
        raise _invalid_input(
            f"{model}: output '{name}' is not batched along axis 0 like the inputs "
            f"(its shape {'x'.join('?' if d is None else str(d) for d in shape) or 'scalar'})")


def _session(model, options):
    key = (model, tokenize(sorted(options.items())))
    with _sessions_lock:
        session = _sessions.get(key)
        if session is None:
            session = _sessions[key] = hetsched.Session(model, **options)
        return session


def _run_chunk(model, options, names, batch, index, first_row, *blocks):
    """One chunk on this process's session: a dict output name -> array."""
    n_rows = blocks[0].shape[0]
    try:
        session = _session(model, options)
        if batch is None:
            return session.run(dict(zip(names, blocks)))
        feeds = [{name: block[i:i + batch] for name, block in zip(names, blocks)} for i in range(0, n_rows, batch)]
        # In throughput mode the session serves runs side by side, one per
        # worker of its flow (runs release the GIL); else one at a time.
        n_workers = len(session.summary.get("workers") or ()) if options.get("mode") == "throughput" else 1
        if n_workers > 1 and len(feeds) > 1:
            with concurrent.futures.ThreadPoolExecutor(min(n_workers, len(feeds))) as pool:
                parts = list(pool.map(session.run, feeds))
        else:
            parts = [session.run(feed) for feed in feeds]
        return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    except hetsched.Error as e:
        located = type(e)(f"{_this_worker()}, chunk {index} (rows {first_row}-{first_row + n_rows - 1}): {e}")
        located.code = getattr(e, "code", None)
        raise located from None


def _this_worker():
    try:
        from distributed import get_worker
        worker = get_worker()
        return f"worker {worker.name} ({worker.address})"
    except (ImportError, ValueError):  # not on a distributed worker
        return f"process {os.getpid()} on {socket.gethostname()}"


def _host_and_cores():
    return socket.gethostname(), sorted(os.sched_getaffinity(0))


def _pin_process(cores):
    # sched_setaffinity applies to one thread: every thread of the process.
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except ProcessLookupError:  # ended meanwhile
            pass
    with _sessions_lock:
        _sessions.clear()
    return cores
