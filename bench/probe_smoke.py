#!/usr/bin/env python3
"""Smoke test of a built temper-probe on the GPU host (no Temper needed): speaks the wire protocol
(core/engine/probe_protocol.h), checks that a tuned config gives the stock result, that the result
matches a float64 reference within q8_1 rounding, and prints stock vs tuned times; then the
kernel-only timing (protocol 2): its launches' output (dst is poisoned after the probe's own
MUL_MAT) is the stock result, it refuses nwarps 0,
and it takes less time than the whole MUL_MAT.
Usage: probe_smoke.py PATH/TO/temper-probe"""
import struct, subprocess, sys, time
import numpy as np

HELLO, ALLOC, FREE, UPLOAD, DOWNLOAD, FILL, QUANTIZE, GEMV, TIME, HAS, ATTR, STOCK, BW, QUIT = range(1, 15)
TIME_KERNEL = 16  # protocol 2
Q4_0, Q4_K = 2, 12


class Probe:
    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def call(self, op, payload=b""):
        self.p.stdin.write(struct.pack("<II", op, len(payload)) + payload)
        self.p.stdin.flush()
        status, n = struct.unpack("<iI", self.p.stdout.read(8))
        data = self.p.stdout.read(n)
        if status != 0:
            raise RuntimeError(f"op {op}: status {status}: {data.decode()}")
        return data

    def alloc(self, nbytes):
        return struct.unpack("<Q", self.call(ALLOC, struct.pack("<Q", nbytes)))[0]

    def upload(self, h, data):
        self.call(UPLOAD, struct.pack("<QQ", h, 0) + data)

    def download(self, h, nbytes):
        return self.call(DOWNLOAD, struct.pack("<QQQ", h, 0, nbytes))


def q4_0_blocks(rng, n, k):
    nb = n * k // 32
    d = (rng.random(nb, dtype=np.float32) * 0.01 + 0.001).astype(np.float16)
    qs = rng.integers(0, 256, size=(nb, 16), dtype=np.uint8)
    raw = np.zeros(nb, dtype=[("d", "<f2"), ("qs", "u1", 16)])
    raw["d"], raw["qs"] = d, qs
    lo, hi = (qs & 15).astype(np.float64) - 8, (qs >> 4).astype(np.float64) - 8
    w = np.concatenate([lo, hi], axis=1) * d.astype(np.float64)[:, None]
    return raw.tobytes(), w.reshape(n, k)


def main():
    probe = Probe(sys.argv[1])
    print(probe.call(HELLO).decode().strip().replace("\n", "  "))
    rng = np.random.default_rng(7)
    n = k = 4096
    wbytes, w = q4_0_blocks(rng, n, k)
    copies = [probe.alloc(len(wbytes)) for _ in range(8)]
    for c in copies:
        probe.upload(c, wbytes)
    x = rng.standard_normal(k).astype(np.float32)
    hx, hy, hd = probe.alloc(k * 4), probe.alloc(k // 32 * 36), probe.alloc(n * 4)
    probe.upload(hx, x.tobytes())
    probe.call(QUANTIZE, struct.pack("<QQii", hx, hy, k, 1))
    stock = struct.unpack("<ii", probe.call(STOCK, struct.pack("<iii", Q4_0, 1, k)))
    print("stock config q4_0 ncols 1:", stock, " q4_K:", struct.unpack("<ii", probe.call(STOCK, struct.pack("<iii", Q4_K, 1, k))))
    outs = {}
    for cfg in [(0, 0), (8, 2), (2, 4), (16, 1)]:
        probe.call(FILL, struct.pack("<QB", hd, 0xFF))
        probe.call(GEMV, struct.pack("<iiiiiiQQQ", Q4_0, n, k, 1, cfg[0], cfg[1], copies[0], hy, hd))
        outs[cfg] = np.frombuffer(probe.download(hd, n * 4), dtype=np.float32)
    ref = w @ x.astype(np.float64)
    scale = np.abs(ref).max()
    for cfg, o in outs.items():
        print(f"config {cfg}: NaN {int(np.isnan(o).sum())}, max |engine - f64 ref| / max|ref| = {np.abs(o - ref).max() / scale:.2e}, "
              f"max |tuned - stock| = {np.abs(o - outs[(0, 0)]).max():.2e}")
        assert not np.isnan(o).any() and np.abs(o - ref).max() / scale < 2e-2
        assert np.abs(o - outs[(0, 0)]).max() <= 1e-3 * scale
    for cfg in [(0, 0), (4, 1), (8, 2), (2, 4)]:
        groups, per = 30, 8
        us = struct.unpack(f"<{groups}d", probe.call(TIME, struct.pack("<iiiiiiiiQQI", Q4_0, n, k, 1, cfg[0], cfg[1], groups, per, hy, hd, len(copies))
                                                         + struct.pack(f"<{len(copies)}Q", *copies)))
        attr = struct.unpack("<5i", probe.call(ATTR, struct.pack("<iiii", Q4_0, 1, max(cfg[0], 1), max(cfg[1], 1))))
        print(f"time {cfg}: median {np.median(us):.2f} us per MUL_MAT (p10 {np.percentile(us, 10):.2f}, p90 {np.percentile(us, 90):.2f}); attrs {attr}")
        if cfg == (0, 0):
            whole_stock = np.median(us)
    # Kernel-only: mul_mat_vec_q alone; the stock config (4,1) as its grid instantiation.
    try:
        probe.call(TIME_KERNEL, struct.pack("<iiiiiiiiQQI", Q4_0, n, k, 1, 0, 0, 2, 1, hy, hd, 1) + struct.pack("<Q", copies[0]))
        raise AssertionError("TimeKernel accepted nwarps 0")
    except RuntimeError as e:
        assert "status 3" in str(e), e
    for cfg in [stock, (8, 2), (2, 4)]:
        probe.call(FILL, struct.pack("<QB", hd, 0xFF))
        groups, per = 30, 8
        us = struct.unpack(f"<{groups}d", probe.call(TIME_KERNEL, struct.pack("<iiiiiiiiQQI", Q4_0, n, k, 1, cfg[0], cfg[1], groups, per, hy, hd, len(copies))
                                                            + struct.pack(f"<{len(copies)}Q", *copies)))
        o = np.frombuffer(probe.download(hd, n * 4), dtype=np.float32)
        diff = np.abs(o - outs[(0, 0)]).max()
        print(f"kernel-only {cfg}: median {np.median(us):.2f} us per launch (p10 {np.percentile(us, 10):.2f}, p90 {np.percentile(us, 90):.2f}); "
              f"max |output - stock MUL_MAT| = {diff:.2e}")
        assert not np.isnan(o).any() and diff <= 1e-3 * scale
        if cfg == stock:
            assert np.median(us) < whole_stock, (np.median(us), whole_stock)
    print("bandwidth GB/s:", struct.unpack("<d", probe.call(BW, struct.pack("<Q", 256 << 20)))[0])
    probe.call(QUIT) if False else None
    print("probe smoke: OK")


if __name__ == "__main__":
    main()
