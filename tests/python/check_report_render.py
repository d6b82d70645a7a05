#!/usr/bin/python3
"""Renders a `hetsched compare --report` page in headless Chromium and checks it.

Runs the real CLI on a small zoo model over an emulated platform, then
Debian's Chromium twice: once for a screenshot (a PNG decoded here with zlib
and struct: the requested size, many colours, every device colour of the
page present), once for the rendered DOM (the charts' SVG elements are in
it, as many as the page holds). Exits 77 (ctest's SKIP_RETURN_CODE) when
Chromium is not installed.

The screenshot and the page stay in --work for a look by eye.
"""

import argparse
import collections
import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

SKIP = 77
WIDTH, HEIGHT = 1280, 2400


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(cmd, env, timeout):
    print("+ " + " ".join(cmd), flush=True)
    try:
        return subprocess.run(cmd, env=env, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except subprocess.TimeoutExpired:
        fail(f"timed out after {timeout} s: {cmd[0]}")


# ---------------------------------------------------------------- PNG


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode_png(path):
    """Returns (width, height, rows): rows of RGB(A) bytes, 8 bits per channel."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length, kind) = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + chunk) & 0xFFFFFFFF != crc:
            fail(f"{path}: bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None:
        fail(f"{path}: no IHDR chunk")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in (2, 6) or interlace != 0:
        fail(f"{path}: expected 8-bit RGB or RGBA, not interlaced; got depth {depth} type {colour_type}")
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    if len(raw) != height * (stride + 1):
        fail(f"{path}: image data holds {len(raw)} bytes, expected {height * (stride + 1)}")
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 0xFF
        elif kind == 2:
            if any(row):
                row = bytearray((a + b) & 0xFF for a, b in zip(row, prev))
            else:
                row = bytearray(prev)
        elif kind == 3:
            for i in range(stride):
                left = row[i - bpp] if i >= bpp else 0
                row[i] = (row[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                left = row[i - bpp] if i >= bpp else 0
                up_left = prev[i - bpp] if i >= bpp else 0
                row[i] = (row[i] + paeth(left, prev[i], up_left)) & 0xFF
        elif kind != 0:
            fail(f"{path}: unknown filter {kind} on row {y}")
        rows.append(bytes(row))
        prev = row
    return width, height, bpp, rows


def colour_counts(rows, bpp):
    """Pixels per RGB colour (bytes of 3)."""
    counts = collections.Counter()
    for row in rows:
        counts.update(zip(row[0::bpp], row[1::bpp], row[2::bpp]))
    return {bytes(rgb): n for rgb, n in counts.items()}


# ---------------------------------------------------------------- DOM


class SvgCounter(html.parser.HTMLParser):
    """Counts gantt SVGs, their lanes and the shapes and tooltips in SVGs."""

    def __init__(self):
        super().__init__()
        self.gantts = 0
        self.lanes = 0
        self.svgs = 0
        self.rects = 0
        self.titles = 0
        self.depth = 0  # inside an <svg>

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg":
            self.svgs += 1
            self.depth += 1
            if "gantt" in (attrs.get("class") or "").split():
                self.gantts += 1
        elif self.depth and tag == "rect":
            self.rects += 1
        elif self.depth and tag == "title":
            self.titles += 1
        elif self.depth and tag == "g" and attrs.get("class") == "lane":
            self.lanes += 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag == "svg":
            self.depth -= 1

    def handle_endtag(self, tag):
        if tag == "svg" and self.depth:
            self.depth -= 1


def svg_counts(text):
    counter = SvgCounter()
    counter.feed(text)
    return counter


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hetsched", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work", required=True, help="folder for the report, screenshot and Chromium's profile")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--model", default="zoo:squeezenet1_0")
    # Schedulers that use all three devices of the phone SoC, planning fast.
    parser.add_argument("--schedulers", default="heft,type-based,opara,round-robin,sequential")
    args = parser.parse_args()

    if not os.access(args.chromium, os.X_OK):
        print(f"SKIP: {args.chromium} not found (Debian package chromium); the report is not rendered")
        return SKIP

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # A private home, cache and Chromium profile: nothing shared with the
    # user's, and nothing Chromium needs from a desktop session.
    env = dict(os.environ)
    for var, sub in (("HOME", "home"), ("XDG_CACHE_HOME", "cache"), ("XDG_CONFIG_HOME", "config")):
        env[var] = os.path.join(work, sub)
        os.makedirs(env[var])

    report_dir = os.path.join(work, "report")
    platform = os.path.join(args.source_dir, "platforms", "phone-soc.json")
    r = run([args.hetsched, "compare", args.model, "--platform", platform, "--schedulers", args.schedulers,
             "--measure", "-w", "0", "-n", "1", "--db", os.path.join(work, "profile.db"), "--report", report_dir], env, 300)
    out = r.stdout.decode(errors="replace")
    if r.returncode != 0:
        fail(f"hetsched compare exited {r.returncode}:\n{out}{r.stderr.decode(errors='replace')}")
    page = os.path.join(report_dir, "index.html")
    if f"report written to {page}" not in out:
        fail(f"expected 'report written to {page}' in:\n{out}")
    with open(page, encoding="utf-8") as f:
        source = f.read()
    if re.search(r"""<(script|link|img)[^>]+(src|href)=["']?(https?:|//)""", source):
        fail("the page fetches something from elsewhere")
    device_colours = sorted(set(re.findall(r'data-device-color="#([0-9a-f]{6})"', source)))
    if len(device_colours) < 2:
        fail(f"expected the devices' colours in the page, found {device_colours}")

    chrome = [args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--force-color-profile=srgb", "--user-data-dir=" + os.path.join(work, "chromium"),
              f"--window-size={WIDTH},{HEIGHT}"]
    url = "file://" + page

    shot = os.path.join(work, "screenshot.png")
    r = run(chrome + ["--screenshot=" + shot, url], env, 120)
    if r.returncode != 0 or not os.path.exists(shot):
        fail(f"chromium made no screenshot (exit {r.returncode}):\n{r.stderr.decode(errors='replace')[-2000:]}")
    width, height, bpp, rows = decode_png(shot)
    if (width, height) != (WIDTH, HEIGHT):
        fail(f"screenshot is {width}x{height}, expected {WIDTH}x{HEIGHT}")
    counts = colour_counts(rows, bpp)
    if len(counts) < 200:
        fail(f"screenshot has {len(counts)} distinct colours: blank or unstyled")
    background, most = max(counts.items(), key=lambda kv: kv[1])
    if most > 0.9 * width * height:
        fail(f"screenshot is {100 * most / (width * height):.0f}% one colour {background.hex()}: nearly blank")
    # Every device's colour shows (legend swatches at least), and one of
    # them widely: the first timeline's bars are on screen.
    device_pixels = {c: counts.get(bytes.fromhex(c), 0) for c in device_colours}
    for hex_colour, pixels in device_pixels.items():
        if pixels < 50:
            fail(f"device colour #{hex_colour} covers {pixels} pixels of the screenshot, expected at least 50")
    if max(device_pixels.values()) < 2000:
        fail(f"no device colour covers 2000 pixels ({device_pixels}): no timeline bars on screen")
    print(f"screenshot {shot}: {width}x{height}, {len(counts)} colours, device colours "
          + ", ".join(f"#{c} ({counts[bytes.fromhex(c)]} px)" for c in device_colours))

    r = run(chrome + ["--dump-dom", url], env, 120)
    dom = r.stdout.decode(errors="replace")
    if r.returncode != 0 or "</html>" not in dom:
        fail(f"chromium dumped no DOM (exit {r.returncode}):\n{r.stderr.decode(errors='replace')[-2000:]}")
    with open(os.path.join(work, "dom.html"), "w", encoding="utf-8") as f:
        f.write(dom)
    want, got = svg_counts(source), svg_counts(dom)
    if want.gantts < 2 or want.lanes < 2:
        fail(f"the page holds {want.gantts} timelines with {want.lanes} lanes; expected several")
    for what in ("svgs", "gantts", "lanes", "rects", "titles"):
        if getattr(got, what) != getattr(want, what):
            fail(f"rendered DOM has {getattr(got, what)} {what}, the page {getattr(want, what)}")
    print(f"rendered DOM: {got.svgs} SVGs, {got.gantts} timelines, {got.lanes} lanes, {got.rects} rects, "
          f"{got.titles} tooltips")
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
