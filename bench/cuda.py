#!/usr/bin/python3
"""GPU latency benchmark: hetsched's CUDA backend against PyTorch at batch 1.

Run on a machine with an NVIDIA GPU (`make bench-cuda`). Without a GPU it
prints why and exits 0.

Rows per model (default inception_v3, googlenet, nasnet, randwire, bert):

  hetsched sequential      --devices cuda:0*1 --scheduler sequential --cuda-graph off
  hetsched sequential+graph --devices cuda:0*1 --scheduler sequential --cuda-graph on
  hetsched opara/ios/nimble/auto  --devices cuda:0*S --scheduler X --cuda-graph on
  torch eager              the same network, op for op, in PyTorch on the GPU
  torch graph              the same, captured with torch.cuda.graph and replayed

Method
------
1. Network.  Each zoo model is exported once with `hetsched export` (the
   optimised graph: BatchNorm folded into Conv, pads folded, as any ONNX
   deployment has it).  hetsched runs that .onnx file.  PyTorch runs the same
   file through a small interpreter (OnnxModule below): one torch.nn.functional
   call per ONNX node, weights as CUDA tensors, so both engines compute the
   same network with the same weights on the same GPU libraries (PyTorch's
   convolutions and products go to cuDNN and cuBLAS too).
2. Input.  One seeded random input per model, saved as .npy; hetsched gets it
   with --input NAME=FILE, the PyTorch worker loads the same file.  PyTorch's
   output is checked against hetsched's CPU output (`--devices cpu`, oneDNN):
   `rel_diff` = max |torch - cpu| / max |cpu|.  hetsched's GPU rows are checked
   the same way where they run.
3. Timing.  End to end from a host tensor to a host tensor, as `hetsched run`
   times it: PyTorch copies the input to the GPU, runs (eager) or copies into
   the captured input and replays (graph), copies the output back and
   synchronises; timed with time.perf_counter.  Each run: W warm-ups, N timed
   iterations; the median is reported with the min..max over rounds.  FP32
   everywhere (TF32 off in PyTorch: torch.backends.*.allow_tf32 = False), as
   hetsched's kernels compute.
4. Processes.  Every timing run is a fresh process; rounds are interleaved
   (every configuration of a model back to back, the order reversed every
   other round).

CPU + GPU rows (after the GPU rows of each model; --no-cpu-gpu skips them):

  hetsched compare MODEL --devices cpu:1-N,cuda:0 --schedulers duet,auto --measure

   the CPU alone (every core but the first, which is left to the threads
   driving the GPU; oneDNN), the GPU alone, and the duet and
   auto plans over both, measured by `compare` in interleaved rounds; each
   plan's speed-up over the GPU alone and over the CPU alone, and the CPU's
   share of the work (FLOPs and nodes, from compare's JSON).  Where the CPU
   cannot help, auto's share on it should be 0.

Profiles.  Before timing a model, `hetsched profile` measures its launch units
on cpu and cuda:0 into the run's profile database, so that every scheduler
plans with measured costs (the GPU's step times are the GPU's own).

hetsched's GPU rows run through the executor's GPU lanes and its --cuda-graph
flag (docs/cuda.md, "Executor integration"). A hetsched whose `run --help`
lacks --cuda-graph, or whose trial run on cuda:0 fails, has those rows
reported as "pending" with the reason, and only the PyTorch rows measured.

Output: bench/results/cuda.csv, bench/results/cuda_cpu_gpu.csv and
bench/results/cuda.md (GPU model, driver, CUDA libraries, date, hetsched
commit), and the tables printed.

Examples:
    /usr/bin/python3 bench/cuda.py --hetsched build/hetsched
    /usr/bin/python3 bench/cuda.py --hetsched build/hetsched --quick --models googlenet,bert
"""

import argparse
import csv
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = "inception_v3,googlenet,nasnet,randwire,bert"
SCHEDULERS = ["opara", "ios", "nimble", "auto"]


# ---------------------------------------------------------------- PyTorch side (worker process)

def onnx_module(path, torch, device):
    """A callable running the ONNX graph at `path` with torch ops on `device`."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import torch.nn.functional as F

    model = onnx.load(path)
    graph = model.graph
    consts = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()).to(device) for t in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = torch.from_numpy(numpy_helper.to_array(n.attribute[0].t).copy()).to(device)
    # Host copies of the small integer constants that shape ops read.
    host_ints = {k: [int(x) for x in v.flatten().tolist()] for k, v in consts.items()
                 if v.dtype in (torch.int64, torch.int32) and v.numel() <= 16}

    def attrs(node):
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def spatial_pad(x, pads, value=0.0):
        n = len(pads) // 2
        torch_pads = []
        for i in reversed(range(n)):  # F.pad: last dim first, (begin, end)
            torch_pads += [pads[i], pads[i + n]]
        return F.pad(x, torch_pads, value=value) if any(torch_pads) else x

    def conv(x, w, b, a):
        n = w.dim() - 2
        pads = list(a.get("pads", [0] * 2 * n))
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise NotImplementedError("auto_pad (the optimised export has explicit pads)")
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
        symmetric = pads[:n] == pads[n:]
        if not symmetric:
            x = spatial_pad(x, pads)
        return fn(x, w, b, stride=a.get("strides", [1] * n), padding=pads[:n] if symmetric else 0,
                  dilation=a.get("dilations", [1] * n), groups=a.get("group", 1))

    def pool(x, a, op):
        n = x.dim() - 2
        k = a["kernel_shape"]
        s = a.get("strides", [1] * n)
        pads = list(a.get("pads", [0] * 2 * n))
        ceil = bool(a.get("ceil_mode", 0))
        symmetric = pads[:n] == pads[n:] and all(p <= kk // 2 for p, kk in zip(pads[:n], k))
        if op == "MaxPool":
            fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[n]
            d = a.get("dilations", [1] * n)
            if symmetric:
                return fn(x, k, s, pads[:n], dilation=d, ceil_mode=ceil)
            return fn(spatial_pad(x, pads, float("-inf")), k, s, 0, dilation=d, ceil_mode=ceil)
        fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
        include = bool(a.get("count_include_pad", 0))
        if symmetric:
            return fn(x, k, s, pads[:n], ceil_mode=ceil, count_include_pad=include)
        total = fn(spatial_pad(x, pads), k, s, 0, ceil_mode=ceil, count_include_pad=True)
        if include:
            return total
        ones = spatial_pad(torch.ones_like(x[:1, :1]), pads)
        return total / fn(ones, k, s, 0, ceil_mode=ceil, count_include_pad=True)

    def run_node(n, v):
        a = attrs(n)
        i = [v[name] if name else None for name in n.input]
        op = n.op_type
        if op == "Conv":
            return conv(i[0], i[1], i[2] if len(i) > 2 else None, a)
        if op in ("MaxPool", "AveragePool"):
            return pool(i[0], a, op)
        if op == "GlobalAveragePool":
            return i[0].mean(dim=tuple(range(2, i[0].dim())), keepdim=True)
        if op == "GlobalMaxPool":
            return i[0].amax(dim=tuple(range(2, i[0].dim())), keepdim=True)
        if op == "Relu":
            return F.relu(i[0])
        if op == "Clip":
            lo = i[1].item() if len(i) > 1 and i[1] is not None else a.get("min")
            hi = i[2].item() if len(i) > 2 and i[2] is not None else a.get("max")
            return torch.clamp(i[0], lo, hi)
        if op == "Sigmoid":
            return torch.sigmoid(i[0])
        if op == "Erf":
            return torch.erf(i[0])
        if op in ("Add", "Sub", "Mul", "Div", "Pow"):
            return {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow}[op](
                i[0], i[1])
        if op == "Concat":
            return torch.cat(i, dim=a.get("axis", 0))
        if op == "Flatten":
            axis = a.get("axis", 1)
            return i[0].reshape(int(np.prod(i[0].shape[:axis])), -1)
        if op == "Gemm":
            x, w = i[0], i[1]
            if a.get("transA", 0):
                x = x.t()
            if not a.get("transB", 0):
                w = w.t()
            y = F.linear(x, w) * a.get("alpha", 1.0)
            if len(i) > 2 and i[2] is not None:
                y = y + a.get("beta", 1.0) * i[2]
            return y
        if op == "MatMul":
            return torch.matmul(i[0], i[1])
        if op == "BatchNormalization":
            return F.batch_norm(i[0], i[3], i[4], i[1], i[2], False, 0.0, a.get("epsilon", 1e-5))
        if op == "Reshape":
            shape = host_ints[n.input[1]]
            shape = [i[0].shape[d] if s == 0 else s for d, s in enumerate(shape)]
            return i[0].reshape(shape)
        if op == "Transpose":
            return i[0].permute(*a["perm"])
        if op == "Softmax":
            return F.softmax(i[0], dim=a.get("axis", -1))
        if op == "LayerNormalization":
            axis = a.get("axis", -1) % i[0].dim()
            return F.layer_norm(i[0], i[0].shape[axis:], i[1], i[2] if len(i) > 2 else None, a.get("epsilon", 1e-5))
        if op == "Gather":
            axis = a.get("axis", 0)
            idx = i[1].long()
            return torch.index_select(i[0], axis, idx.reshape(-1)).reshape(
                i[0].shape[:axis] + idx.shape + i[0].shape[axis + 1:])
        if op == "Pad":
            return spatial_pad(i[0], host_ints[n.input[1]],
                               i[2].item() if len(i) > 2 and i[2] is not None else 0.0)
        if op == "Slice":
            starts, ends = host_ints[n.input[1]], host_ints[n.input[2]]
            axes = host_ints[n.input[3]] if len(n.input) > 3 and n.input[3] else list(range(len(starts)))
            steps = host_ints[n.input[4]] if len(n.input) > 4 and n.input[4] else [1] * len(starts)
            index = [slice(None)] * i[0].dim()
            for st, en, ax, sp in zip(starts, ends, axes, steps):
                if sp < 0:
                    raise NotImplementedError("negative Slice steps")
                index[ax] = slice(st, min(en, i[0].shape[ax]), sp)
            return i[0][tuple(index)]
        if op in ("Identity", "Dropout"):
            return i[0]
        raise NotImplementedError(f"op {op} in the benchmark's PyTorch interpreter")

    nodes = [n for n in graph.node if n.op_type != "Constant"]
    inputs = [vi.name for vi in graph.input if vi.name not in consts]
    outputs = [vi.name for vi in graph.output]

    def forward(*args):
        v = dict(consts)
        v.update(zip(inputs, args))
        for n in nodes:
            v[n.output[0]] = run_node(n, v)
        return [v[o] for o in outputs]

    return forward, inputs, outputs


def worker(args):
    """One PyTorch timing run; prints a JSON line."""
    import time
    import numpy as np
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    device = torch.device("cuda:0")
    forward, inputs, outputs = onnx_module(args.model_path, torch, device)
    host = torch.from_numpy(np.load(args.input_npy))
    times = []
    with torch.inference_mode():
        if args.torch_mode == "eager":
            def step():
                return [o.cpu() for o in forward(host.to(device, non_blocking=False))]
        else:
            static_in = host.to(device)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    forward(static_in)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = forward(static_in)

            def step():
                static_in.copy_(host)
                graph.replay()
                return [o.cpu() for o in static_out]
        out = None
        for _ in range(1 + args.warmup):
            out = step()
        torch.cuda.synchronize()
        for _ in range(args.iterations):
            t0 = time.perf_counter()
            out = step()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
    result = {"times_ms": times}
    if args.reference_npy:
        ref = np.load(args.reference_npy)
        got = out[0].numpy()
        result["rel_diff"] = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))
    print(json.dumps(result))


def torch_status():
    """(usable, description) of PyTorch with CUDA, asked in a helper process."""
    code = ("import json, torch; print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda, "
            "'available': torch.cuda.is_available(), 'cudnn': torch.backends.cudnn.version() "
            "if torch.cuda.is_available() else None}))")
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        info = json.loads(r.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError, OSError) as e:
        return False, f"PyTorch not usable ({e})"
    if not info["available"]:
        return False, (f"PyTorch {info['version']} has no usable CUDA (built with CUDA {info['cuda']}): "
                       "the PyTorch rows need a CUDA build of PyTorch")
    return True, f"PyTorch {info['version']} (CUDA {info['cuda']}, cuDNN {info['cudnn']})"


# ---------------------------------------------------------------- hetsched side

def run(cmd, timeout, env=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if r.returncode != 0:
        lines = (r.stderr.strip() or r.stdout.strip()).splitlines()
        return None, f"exit {r.returncode}: {lines[-1] if lines else ''}"
    return r.stdout, None


def devices(exe):
    out, err = run([exe, "devices", "--json"], 120)
    if err:
        sys.exit(f"hetsched devices failed: {err}")
    return json.loads(out)


def hetsched_gpu_ready(exe, model_path):
    """'' when `hetsched run` takes --cuda-graph and runs a model on cuda:0;
    else why the hetsched rows are pending."""
    help_text, err = run([exe, "run", "--help"], 60)
    if err or "--cuda-graph" not in help_text:
        return ("pending: `hetsched run` has no --cuda-graph flag yet (the executor does not run GPU lanes; "
                "docs/cuda.md, Executor integration)")
    _, err = run([exe, "run", model_path, "--devices", "cuda:0*1", "--cuda-graph", "off", "-n", "1", "-w", "0"], 600)
    return f"pending: a trial run on cuda:0 failed ({err})" if err else ""


def hetsched_config(name, streams):
    if name == "sequential":
        return ["--devices", "cuda:0*1", "--scheduler", "sequential", "--cuda-graph", "off"]
    if name == "sequential+graph":
        return ["--devices", "cuda:0*1", "--scheduler", "sequential", "--cuda-graph", "on"]
    return ["--devices", f"cuda:0*{streams}", "--scheduler", name, "--cuda-graph", "on"]


def time_hetsched(exe, model_path, input_name, input_npy, config, args, workdir, db):
    out_json = os.path.join(workdir, "run.json")
    out_dir = os.path.join(workdir, "out")
    cmd = [exe, "run", model_path, *config, "--input", f"{input_name}={input_npy}", "--db", db,
           "-n", str(args.iterations), "-w", str(args.warmup), "--json", out_json, "--output-dir", out_dir]
    _, err = run(cmd, args.timeout)
    if err:
        return None, err
    with open(out_json) as f:
        return json.load(f), None


def time_torch(mode, model_path, input_npy, reference_npy, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model-path", model_path, "--input-npy",
           input_npy, "--torch-mode", mode, "--iterations", str(args.iterations), "--warmup", str(args.warmup)]
    if reference_npy:
        cmd += ["--reference-npy", reference_npy]
    out, err = run(cmd, args.timeout)
    if err:
        return None, err
    return json.loads(out.strip().splitlines()[-1]), None


def check_interpreter_on_cpu(exe, models, workdir, tolerance=1e-4):
    """Runs the PyTorch side's interpreter on the CPU against hetsched's CPU
    output for each model: what keeps the GPU comparison honest on machines
    without a GPU. Returns the number of models that differ."""
    import numpy as np
    import torch
    torch.set_num_threads(1)
    failed = 0
    for name in models:
        path, _, input_npy, reference = prepare_model(exe, name, workdir)
        if reference is None:
            print(f"{name}: hetsched's CPU run failed")
            failed += 1
            continue
        forward, _, _ = onnx_module(path, torch, torch.device("cpu"))
        with torch.inference_mode():
            got = forward(torch.from_numpy(np.load(input_npy)))[0].numpy()
        ref = np.load(reference)
        diff = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30)) if got.shape == ref.shape else None
        ok = diff is not None and diff <= tolerance
        failed += 0 if ok else 1
        print(f"{name}: {'ok' if ok else 'DIFFERS'} (rel. diff {diff if diff is not None else 'shape ' + str(got.shape)})",
              flush=True)
    return failed


def profile(exe, model_path, devices, db, args):
    """Measures the model's launch units on `devices` into `db`; '' or why not."""
    _, err = run([exe, "profile", model_path, "--devices", devices, "--db", db], args.timeout)
    return f"profile on {devices} failed ({err})" if err else ""


def cpu_spec(machine):
    """The CPU device of the CPU + GPU rows: every core but the first, which
    stays free for the host threads that drive the GPU's streams (the CPU
    device pins its threads to all of its cores)."""
    cores = machine.get("cores") or []
    if len(cores) > 2 and cores == list(range(cores[0], cores[-1] + 1)):
        return f"cpu:{cores[1]}-{cores[-1]}"
    return "cpu"


def cpu_gpu_rows(exe, name, model_path, db, args, workdir, cpu="cpu", gpu="cuda:0"):
    """CPU alone, GPU alone, duet and auto over both, measured by `hetsched compare`.
    `cpu` is a device spec; the rows name the device as hetsched does."""
    out_json = os.path.join(workdir, "cpu_gpu.json")
    cmd = [exe, "compare", model_path, "--devices", f"{cpu},{gpu}", "--schedulers", "duet,auto", "--measure",
           "-n", str(max(args.rounds * 3, 5)), "-w", str(min(args.warmup, 3)), "--db", db, "--json", out_json]
    _, err = run(cmd, args.timeout)
    if err:
        return [{"model": name, "plan": f"{cpu},{gpu}", "note": err}]
    with open(out_json) as f:
        c = json.load(f)
    alone = {b["device"]: b for b in c["sequential"]}
    cpu = next((d for d in alone if d != gpu), cpu)  # "cpu" is named by its cores ("cpu:0-15")
    gpu_ms = alone.get(gpu, {}).get("measured_p50_ms")
    cpu_ms = alone.get(cpu, {}).get("measured_p50_ms")

    def row(plan, measured, devices=None, note=""):
        ms = measured.get("measured_p50_ms")
        r = {"model": name, "plan": plan, "median_ms": ms, "min_ms": measured.get("measured_min_ms"),
             "max_ms": measured.get("measured_max_ms"),
             "vs_gpu": gpu_ms / ms if ms and gpu_ms else None, "vs_cpu": cpu_ms / ms if ms and cpu_ms else None,
             "cpu_flops_share": None, "cpu_nodes": None, "note": note}
        if devices is not None:
            on_cpu = [d for d in devices if d["device"] == cpu]
            flops = on_cpu[0]["flops"] if on_cpu else 0.0
            r["cpu_flops_share"] = flops / c["total_flops"] if c["total_flops"] else None
            r["cpu_nodes"] = f"{on_cpu[0]['nodes'] if on_cpu else 0} of {c['nodes']}"
        return r

    rows = [row(f"{cpu} alone", alone.get(cpu, {})), row(f"{gpu} alone", alone.get(gpu, {}))]
    for s in c["schedulers"]:
        rows.append(row(s["name"], s, s.get("devices"), s.get("error", "")))
    return rows


# ---------------------------------------------------------------- driver

def model_params(name):
    return ["--param", "layers=12", "--param", "seq=128"] if name == "bert" else []


def prepare_model(exe, name, workdir):
    """Exports zoo:name, writes a seeded input and hetsched's CPU output.
    Returns (onnx path, input name, input .npy, CPU output .npy or None)."""
    path = os.path.join(workdir, f"{name}.onnx")
    _, err = run([exe, "export", f"zoo:{name}", *model_params(name), "-o", path], 900)
    if err:
        sys.exit(f"export of zoo:{name} failed: {err}")
    helper = ("import sys, numpy as np, onnx\n"
              "m = onnx.load(sys.argv[1], load_external_data=False)\n"
              "inits = {t.name for t in m.graph.initializer}\n"
              "vi = [v for v in m.graph.input if v.name not in inits][0]\n"
              "t = vi.type.tensor_type\n"
              "shape = [d.dim_value for d in t.shape.dim]\n"
              "rng = np.random.default_rng(0)\n"
              "x = rng.integers(0, 1000, shape).astype(np.int64) if t.elem_type == 7 else "
              "rng.standard_normal(shape).astype(np.float32)\n"
              "np.save(sys.argv[2], x)\n"
              "print(vi.name)\n")
    input_npy = os.path.join(workdir, f"{name}_input.npy")
    out, err = run([sys.executable, "-c", helper, path, input_npy], 300)
    if err:
        sys.exit(f"input for {name}: {err}")
    input_name = out.strip().splitlines()[-1]
    cpu_dir = os.path.join(workdir, f"{name}_cpu")
    _, err = run([os.path.abspath(exe), "run", path, "--devices", "cpu", "--input", f"{input_name}={input_npy}",
                  "-n", "1", "-w", "0", "--output-dir", cpu_dir], 1800)
    reference = None
    if not err:
        outs = sorted(f for f in os.listdir(cpu_dir) if f.endswith(".npy"))
        reference = os.path.join(cpu_dir, outs[0]) if outs else None
    return path, input_name, input_npy, reference


def rel_diff(got_npy, ref_npy):
    code = ("import sys, numpy as np; a = np.load(sys.argv[1]); b = np.load(sys.argv[2]); "
            "print(float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)))")
    out, err = run([sys.executable, "-c", code, got_npy, ref_npy], 120)
    return None if err else float(out.strip())


def git_commit():
    try:
        r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        commit = r.stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "src", "include", "tools",
                                "CMakeLists.txt"], capture_output=True, text=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


def fmt_ms(x):
    return "" if x is None else f"{x:.3f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hetsched", default=os.path.join(REPO, "build", "hetsched"))
    p.add_argument("--models", default=DEFAULT_MODELS)
    p.add_argument("--streams", type=int, default=4, help="streams of the multi-stream rows (cuda:0*S)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="1 round, 3 warm-ups, 10 iterations")
    p.add_argument("--timeout", type=int, default=1800)
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results", "cuda.csv"))
    p.add_argument("--keep", help="keep the exported models and inputs in this folder")
    p.add_argument("--no-cpu-gpu", action="store_true", help="skip the CPU + GPU rows")
    p.add_argument("--check-on-cpu", action="store_true",
                   help="no timing: check the PyTorch interpreter on the CPU against hetsched's CPU outputs "
                        "(needs no GPU; exit 1 when a model differs)")
    # Worker mode (one PyTorch timing run).
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model-path", help=argparse.SUPPRESS)
    p.add_argument("--input-npy", help=argparse.SUPPRESS)
    p.add_argument("--reference-npy", help=argparse.SUPPRESS)
    p.add_argument("--torch-mode", choices=["eager", "graph"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return 0
    if args.quick:
        args.rounds, args.warmup, args.iterations = 1, 3, 10

    exe = os.path.abspath(args.hetsched)
    if not os.path.exists(exe):
        sys.exit(f"{exe}: no such file (build first: make build)")
    if args.check_on_cpu:
        with tempfile.TemporaryDirectory(prefix="hetsched_bench_cuda_check_") as workdir:
            return 1 if check_interpreter_on_cpu(exe, [m for m in args.models.split(",") if m], workdir) else 0
    machine = devices(exe)
    if not machine.get("gpus"):
        print(f"bench/cuda.py: nothing to measure on this machine: {machine.get('gpu_note') or 'no CUDA GPU'}.")
        print("Run `make bench-cuda` on a machine with an NVIDIA GPU (and a CUDA build of hetsched).")
        return 0

    workdir = args.keep or tempfile.mkdtemp(prefix="hetsched_bench_cuda_")
    os.makedirs(workdir, exist_ok=True)
    db = os.path.join(workdir, "profiles.sqlite")
    torch_ok, torch_text = torch_status()
    models = [m for m in args.models.split(",") if m]
    configs = ["sequential", "sequential+graph"] + SCHEDULERS
    rows, mixed_rows = [], []
    try:
        for name in models:
            print(f"== {name}", flush=True)
            path, input_name, input_npy, reference = prepare_model(exe, name, workdir)
            pending = hetsched_gpu_ready(exe, path)
            if not pending:
                pending = profile(exe, path, f"cuda:0*{args.streams}", db, args)
            results = {}  # engine row -> {"medians": [...], "note": str, "rel_diff": float}
            for r in range(args.rounds):
                order = [("hetsched", c) for c in configs] + ([("torch", m) for m in ("eager", "graph")]
                                                             if torch_ok else [])
                if r % 2 == 1:
                    order.reverse()
                for engine, config in order:
                    key = f"{engine} {config}"
                    entry = results.setdefault(key, {"medians": [], "note": "", "rel_diff": None})
                    if engine == "hetsched":
                        if pending:
                            entry["note"] = pending
                            continue
                        data, err = time_hetsched(exe, path, input_name, input_npy,
                                                  hetsched_config(config, args.streams), args, workdir, db)
                        if err:
                            entry["note"] = err
                            continue
                        entry["medians"].append(statistics.median(data["times_ms"]))
                        outs = sorted(f for f in os.listdir(os.path.join(workdir, "out")) if f.endswith(".npy"))
                        if reference and outs and entry["rel_diff"] is None:
                            entry["rel_diff"] = rel_diff(os.path.join(workdir, "out", outs[0]), reference)
                    else:
                        data, err = time_torch(config, path, input_npy, reference, args)
                        if err:
                            entry["note"] = err
                            continue
                        entry["medians"].append(statistics.median(data["times_ms"]))
                        entry["rel_diff"] = data.get("rel_diff", entry["rel_diff"])
                    print(f"  round {r + 1}: {key}: {entry['medians'][-1]:.3f} ms", flush=True)
            if not torch_ok:
                results["torch eager"] = {"medians": [], "note": torch_text, "rel_diff": None}
                results["torch graph"] = {"medians": [], "note": torch_text, "rel_diff": None}
            for key, entry in results.items():
                m = entry["medians"]
                rows.append({"model": name, "engine": key.split(" ", 1)[0], "config": key.split(" ", 1)[1],
                             "median_ms": statistics.median(m) if m else None, "min_ms": min(m) if m else None,
                             "max_ms": max(m) if m else None, "rounds": len(m), "rel_diff": entry["rel_diff"],
                             "note": entry["note"] if not m else ""})
            if not args.no_cpu_gpu:
                cpu = cpu_spec(machine)
                why = pending or profile(exe, path, cpu, db, args)
                mixed = [{"model": name, "plan": f"{cpu},cuda:0", "note": why}] if why else \
                    cpu_gpu_rows(exe, name, path, db, args, workdir, cpu=cpu)
                for r in mixed:
                    print(f"  cpu+gpu: {r['plan']}: {fmt_ms(r.get('median_ms')) or r['note']}", flush=True)
                mixed_rows += mixed
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = (f"GPU: {'; '.join(machine['gpus'])} | {machine.get('gpu_libraries', '')} | {torch_text} | "
              f"hetsched {git_commit()} | {date} | {args.rounds} rounds x {args.iterations} iterations "
              f"({args.warmup} warm-ups)")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    fields = ["model", "engine", "config", "median_ms", "min_ms", "max_ms", "rounds", "rel_diff", "note"]
    with open(args.out, "w", newline="") as f:
        f.write(f"# {header}\n")
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for row in rows:
            w.writerow(row)
    lines = [f"{header}", "", "| model | engine | config | median ms | [min..max] | rel. diff vs CPU | note |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        spread = f"[{fmt_ms(row['min_ms'])}..{fmt_ms(row['max_ms'])}]" if row["median_ms"] is not None else ""
        diff = "" if row["rel_diff"] is None else f"{row['rel_diff']:.1e}"
        lines.append(f"| {row['model']} | {row['engine']} | {row['config']} | {fmt_ms(row['median_ms'])} | {spread} "
                     f"| {diff} | {row['note']} |")
    if mixed_rows:
        mixed_fields = ["model", "plan", "median_ms", "min_ms", "max_ms", "vs_gpu", "vs_cpu", "cpu_flops_share",
                        "cpu_nodes", "note"]
        mixed_csv = os.path.splitext(args.out)[0] + "_cpu_gpu.csv"
        with open(mixed_csv, "w", newline="") as f:
            f.write(f"# {header}\n")
            w = csv.DictWriter(f, fieldnames=mixed_fields, extrasaction="ignore")
            w.writeheader()
            for row in mixed_rows:
                w.writerow(row)
        lines += ["", "CPU + GPU (`hetsched compare --devices cpu:1-N,cuda:0 --schedulers duet,auto --measure`, "
                  "core 0 left to the threads driving the GPU; "
                  "speed-ups of each plan's median over each device alone, measured in the same run):", "",
                  "| model | plan | median ms | [min..max] | vs GPU alone | vs CPU alone | CPU share of FLOPs "
                  "| nodes on the CPU | note |", "|---|---|---|---|---|---|---|---|---|"]
        for row in mixed_rows:
            ms = row.get("median_ms")
            spread = f"[{fmt_ms(row.get('min_ms'))}..{fmt_ms(row.get('max_ms'))}]" if ms is not None else ""
            ratio = lambda x: "" if x is None else f"{x:.2f}x"
            share = row.get("cpu_flops_share")
            lines.append(f"| {row['model']} | {row['plan']} | {fmt_ms(ms)} | {spread} | {ratio(row.get('vs_gpu'))} "
                         f"| {ratio(row.get('vs_cpu'))} | {'' if share is None else f'{100 * share:.1f}%'} "
                         f"| {row.get('cpu_nodes') or ''} | {row.get('note', '')} |")
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwritten: {args.out}, {md}" + (f", {mixed_csv}" if mixed_rows else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
