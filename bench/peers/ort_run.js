#!/usr/bin/env node
// One timing run of ONNX Runtime (CPU, MLAS kernels) on an ONNX file: the
// peer that bench/cpu_vs_ort.py interleaves with `hetsched run`.
//
//   node ort_run.js MODEL.onnx --threads T --warmup W --iterations N
//        [--input NAME=FILE.npy ...] [--output-dir DIR]
//
// Inputs come from .npy files (float32, int64, int32, uint8, int8, bool);
// an input not given is an error, not random data, so both engines see the
// same tensors. Like `hetsched run`, one untimed first run comes before the W
// warm-ups. Prints one JSON line: times_ms (one per timed iteration), the
// session's options, and the output names with their shapes; --output-dir
// writes each output as NAME.npy (names with '/' get '_').
//
// Session options: graphOptimizationLevel 'all', executionMode 'sequential',
// intraOpNumThreads T, interOpNumThreads 1. ORT's parallel executor gains
// nothing on two cores; the caller pins the process for T = 1.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

const DTYPES = {  // numpy descr -> [ORT type, typed array]
  '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
  '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
};

function fail(message) {
  process.stderr.write(`ort_run: ${message}\n`);
  process.exit(1);
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') fail(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape || /'fortran_order':\s*True/.test(header)) fail(`${file}: unsupported header ${header.trim()}`);
  const type = DTYPES[descr[1]];
  if (!type) fail(`${file}: dtype ${descr[1]} is not one of ${Object.keys(DTYPES).join(', ')}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const bytes = buf.subarray(start + headerLen);
  const data = new type[1](bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return new ort.Tensor(type[0], type[0] === 'bool' ? Uint8Array.from(data) : data, dims);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(DTYPES).find((d) => DTYPES[d][0] === tensor.type);
  if (!descr) fail(`output type ${tensor.type} cannot be written as .npy`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';  // data starts 64-aligned
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
}

function parseArgs(argv) {
  const args = { inputs: {}, threads: 1, warmup: 3, iterations: 20 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : fail(`${a} needs a value`));
    if (a === '--threads') args.threads = Number(value());
    else if (a === '--warmup') args.warmup = Number(value());
    else if (a === '--iterations') args.iterations = Number(value());
    else if (a === '--output-dir') args.outputDir = value();
    else if (a === '--input') {
      const [name, file] = value().split(/=(.*)/s);
      if (!file) fail(`--input wants NAME=FILE.npy, got ${argv[i]}`);
      args.inputs[name] = file;
    } else if (a.startsWith('--')) fail(`unknown option ${a}`);
    else if (args.model) fail(`a second model ${a}`);
    else args.model = a;
  }
  if (!args.model) fail('usage: ort_run.js MODEL.onnx [--threads T] [--warmup W] [--iterations N] [--input NAME=FILE.npy]... [--output-dir DIR]');
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const options = {
    graphOptimizationLevel: 'all', executionMode: 'sequential',
    intraOpNumThreads: args.threads, interOpNumThreads: 1,
  };
  const session = await ort.InferenceSession.create(args.model, options);
  const feeds = {};
  for (const name of session.inputNames) {
    if (!(name in args.inputs)) fail(`${args.model}: input '${name}' has no --input`);
    feeds[name] = readNpy(args.inputs[name]);
  }
  for (const name of Object.keys(args.inputs)) {
    if (!session.inputNames.includes(name)) fail(`${args.model} has no input '${name}' (it has ${session.inputNames.join(', ')})`);
  }
  let outputs;
  for (let i = 0; i < 1 + args.warmup; i++) outputs = await session.run(feeds);
  const times = [];
  for (let i = 0; i < args.iterations; i++) {
    const t0 = process.hrtime.bigint();
    outputs = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const shapes = {};
  for (const [name, tensor] of Object.entries(outputs)) {
    shapes[name] = tensor.dims;
    if (args.outputDir) writeNpy(path.join(args.outputDir, name.replace(/\//g, '_') + '.npy'), tensor);
  }
  process.stdout.write(JSON.stringify({ times_ms: times, options, outputs: shapes, ort: require(path.join(__dirname, 'node_modules', 'onnxruntime-node', 'package.json')).version }) + '\n');
}

main().catch((e) => fail(e.message || String(e)));
