"""PyTorch reference for Blaze's ten reference workloads: eager and torch.compile step times.

Mirrors the definitions in shared/docs/workloads.md (never change them here; a changed
definition needs a new name) and their Burn implementations in examples/workloads/src/
(attention_model.rs, mlp.rs, lstm.rs, cnn.rs, moe.rs, chain.rs, text.rs, trainer.rs, task.rs):
same shapes, layer order, activations, losses and kind of data, f32 throughout (TF32 off),
seed 0, Adam(lr 3e-4, betas 0.9/0.999, eps 1e-8) in the training regime.

A step is what the Rust harness times as one step: the character models and cnn-mnist build a
fresh batch on the host (numpy) and copy it to the device inside the step; mlp and chain use one
fixed input/target uploaded once at build time (as mlp.rs and chain.rs do). Then forward + loss
(forward regime: under torch.no_grad(), eval mode) or forward + loss + backward + Adam step +
zero_grad (training), ending with loss.item(). Each step is timed with time.perf_counter();
warm-up steps (which include torch.compile's compilation) are timed separately as warmup_s.

Run from the repository root on the GPU machine (offline; Python 3.12, torch, numpy):
    python3 tools/torch-reference/workloads.py --regime both --out torch-results.json
Smaller runs: --models attention-d257,gpt-small --modes eager --batch 64 --seq 128 --steps 50.
Idiomatic PyTorch by default (fused SDPA attention, cuDNN LSTM); --attention math and --lstm loop
follow Burn's ops instead (explicit scores/mask/softmax; a per-timestep recurrence).
Text: examples/workloads/data/GPL-3.txt (or /usr/share/common-licenses/GPL-3); digits:
examples/workloads/data/mnist/, both relative to --repo (default '.').
"""
import argparse, gc, json, math, os, platform, sys, time

import numpy as np
import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F

VOCAB, SEED = 128, 0
# name -> (kind, reference batch/rows, reference seq/cols; None where there is no sequence)
SPECS = {
    "attention-d256": ("char", 16, 256), "attention-d257": ("char", 16, 256),
    "attention-d258": ("char", 16, 256), "mlp-w1024": ("mlp", 4096, None),
    "mlp-w1025": ("mlp", 4096, None), "lstm-h256": ("char", 32, 64),
    "cnn-mnist": ("cnn", 256, None), "moe-e8k2": ("char", 16, 256),
    "gpt-small": ("char", 16, 256), "chain-32": ("chain", 4096, 4096),
}


# ---- data -------------------------------------------------------------------------------------
class TextBatches:
    """text.rs CharBatcher: xorshift64* window offsets (bit-identical to Burn's), bytes & 0x7f,
    inputs [batch, seq] and next-character targets [batch * seq], int64."""
    M64 = (1 << 64) - 1

    def __init__(self, corpus: bytes, batch: int, seq: int):
        assert seq + 1 < len(corpus), "sequence longer than the corpus"
        self.text = (np.frombuffer(corpus, np.uint8) & 0x7F).astype(np.int64)
        self.batch, self.seq, self.window = batch, seq, np.arange(seq)
        self.state = ((SEED * 0x9E3779B97F4A7C15) & self.M64) | 1

    def offset(self) -> int:
        s = self.state
        s ^= s >> 12
        s ^= (s << 25) & self.M64
        s ^= s >> 27
        self.state = s
        return ((s * 0x2545F4914F6CDD1D) & self.M64) % (len(self.text) - self.seq - 1)

    def next(self):
        at = np.array([self.offset() for _ in range(self.batch)])[:, None] + self.window
        return self.text[at], self.text[at + 1].reshape(-1)


class Digits:
    """cnn.rs: the shipped MNIST subset, training images (all but the last 512) in order,
    wrapping; pixels / 255 as f32 [n, 1, 28, 28], labels int64 [n]."""
    def __init__(self, folder: str, batch: int):
        self.labels = np.fromfile(os.path.join(folder, "labels.u8"), np.uint8).astype(np.int64)
        self.digits = np.fromfile(os.path.join(folder, "digits.u8"), np.uint8).reshape(-1, 1, 28, 28)
        self.train, self.batch, self.at = len(self.labels) - 512, batch, 0

    def next(self):
        i = (self.at + np.arange(self.batch)) % self.train
        self.at = (self.at + self.batch) % self.train
        return self.digits[i].astype(np.float32) / np.float32(255.0), self.labels[i]


# ---- models -----------------------------------------------------------------------------------
class Block(nn.Module):
    """Burn's TransformerEncoderLayer with norm_first: separate q/k/v/output Linear(d, d),
    dropout on attention weights, after attention, after the GELU and after the MLP."""
    def __init__(self, d: int, heads: int, p: float, attention: str):
        super().__init__()
        self.query, self.key, self.value, self.output = (nn.Linear(d, d) for _ in range(4))
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.norm_attn, self.norm_mlp = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop, self.heads, self.p, self.attention = (nn.Dropout(p) if p > 0 else nn.Identity()), heads, p, attention

    def attend(self, x):
        b, s, d = x.shape
        q, k, v = (l(x).view(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for l in (self.query, self.key, self.value))
        p = self.p if self.training else 0.0
        if self.attention == "sdpa":
            ctx = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:  # "math": Burn's MultiHeadAttention op for op (scores, mask, softmax, dropout)
            scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
            causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
            weights = F.dropout(scores.masked_fill(causal, float("-inf")).softmax(-1), p, self.training)
            ctx = weights @ v
        return self.output(ctx.transpose(1, 2).reshape(b, s, d))

    def forward(self, x):
        x = x + self.drop(self.attend(self.norm_attn(x)))
        return x + self.drop(self.down(self.drop(F.gelu(self.up(self.norm_mlp(x))))))


class AttentionLm(nn.Module):
    """attention_model.rs: token + learned position embedding, pre-LN blocks, LayerNorm, head."""
    def __init__(self, d, layers, heads, p, seq, attention):
        super().__init__()
        self.token, self.position = nn.Embedding(VOCAB, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, p, attention) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, VOCAB)

    def forward(self, tokens):
        x = self.token(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class LoopLstm(nn.Module):
    """Burn's Lstm step by step: gates = W_x x_t + b_x + W_h h + b_h (i, f, g, o)."""
    def __init__(self, d: int, h: int):
        super().__init__()
        self.x, self.h, self.hidden = nn.Linear(d, 4 * h), nn.Linear(h, 4 * h), h

    def forward(self, x):
        h = c = x.new_zeros(x.shape[0], self.hidden)
        out = []
        for t in range(x.shape[1]):
            i, f, g, o = (self.x(x[:, t]) + self.h(h)).chunk(4, -1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            out.append(h)
        return torch.stack(out, 1), None


class LstmLm(nn.Module):
    """lstm.rs: embedding 128 -> h, one LSTM layer with biases, linear h -> 128."""
    def __init__(self, h: int, impl: str):
        super().__init__()
        self.embed, self.head = nn.Embedding(VOCAB, h), nn.Linear(h, VOCAB)
        self.lstm = nn.LSTM(h, h, batch_first=True) if impl == "cudnn" else LoopLstm(h, h)
        for w in self.lstm.parameters():  # Burn's default: XavierNormal(gain 1) on every gate Linear
            nn.init.normal_(w, 0.0, math.sqrt(2.0 / (h + h)))

    def forward(self, tokens):
        return self.head(self.lstm(self.embed(tokens))[0])


class MoeLm(nn.Module):
    """moe.rs: embedding, LayerNorm, softmax router with a top-2 dense mask (not renormalised),
    8 dense GELU experts summed by gate weight, residual, linear d -> 128."""
    def __init__(self, d=256, hidden=1024, experts=8):
        super().__init__()
        self.embed, self.norm, self.router = nn.Embedding(VOCAB, d), nn.LayerNorm(d), nn.Linear(d, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
                                     for _ in range(experts))
        self.head = nn.Linear(d, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        h = self.norm(x)
        gates = self.router(h).softmax(-1)
        g = gates.detach()  # moe.rs top2: two max reductions and compares, mask without gradient
        second = g.masked_fill(g >= g.amax(-1, keepdim=True), -1.0).amax(-1, keepdim=True)
        gates = gates.masked_fill(g < second, 0.0)
        for e, expert in enumerate(self.experts):
            x = x + expert(h) * gates[..., e:e + 1]
        return self.head(x)


class Mlp(nn.Module):
    """mlp.rs: 4 residual blocks x + Linear(GELU(Linear(LayerNorm(x))))."""
    def __init__(self, w: int, blocks: int = 4):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(w), nn.Linear(w, w), nn.GELU(), nn.Linear(w, w))
                                    for _ in range(blocks))

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return x


class Cnn(nn.Module):
    """cnn.rs: conv 1->16 3x3 pad 1, ReLU, pool 2; conv 16->32, ReLU, pool 2; linear 1568 -> 10."""
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        self.head = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


class Chain(nn.Module):
    """chain.rs: 8 x [tanh(1.01x + 0.1), exp(-x^2), x*w, sigmoid(x - 0.5)], w a scalar starting at 1."""
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x):
        w = self.w.reshape(1, 1)
        for _ in range(8):
            x = torch.sigmoid(torch.exp(-torch.tanh(x * 1.01 + 0.1).square()) * w - 0.5)
        return x


class Task(nn.Module):
    """Model and loss in one module, so torch.compile sees the loss too."""
    def __init__(self, net: nn.Module, loss: str):
        super().__init__()
        self.net, self.loss = net, loss

    def forward(self, x, y):
        out = self.net(x)
        if self.loss == "ce":
            return F.cross_entropy(out.reshape(-1, out.shape[-1]), y)
        return F.mse_loss(out, y)


# ---- one case ---------------------------------------------------------------------------------
def shapes(name, args):
    """(batch, seq, workload name): overrides applied and named as lib.rs names them."""
    kind, batch, seq = SPECS[name]
    if kind in ("mlp", "cnn"):
        return (args.batch or batch), None, (f"{name}-b{args.batch}" if args.batch else name)
    batch, seq2 = args.batch or batch, args.seq or seq
    return batch, seq2, (f"{name}-b{batch}s{seq2}" if (args.batch or args.seq) else name)


def build(name, batch, seq, args, device):
    """(Task, next_batch) with next_batch() -> (x, y) on the device."""
    upload = lambda *a: tuple(torch.from_numpy(v).to(device) for v in a)
    if SPECS[name][0] == "char":
        if name == "lstm-h256":
            net = LstmLm(256, args.lstm)
        elif name == "moe-e8k2":
            net = MoeLm()
        else:
            d, layers, heads, p = (256, 4, 4, 0.1) if name == "gpt-small" else (int(name[11:]), 2, 1, 0.0)
            net = AttentionLm(d, layers, heads, p, seq, args.attention)
        text = TextBatches(read_corpus(args.repo), batch, seq)
        return Task(net, "ce").to(device), lambda: upload(*text.next())
    if name == "cnn-mnist":
        digits = Digits(os.path.join(args.repo, "examples/workloads/data/mnist"), batch)
        return Task(Cnn(), "ce").to(device), lambda: upload(*digits.next())
    rng = np.random.default_rng(SEED)  # fixed input (and target), built once as in mlp.rs/chain.rs
    if name == "chain-32":
        x = torch.from_numpy(rng.standard_normal((batch, seq), dtype=np.float32)).to(device)
        return Task(Chain(), "mse").to(device), lambda: (x, x)
    w = int(name[5:])
    x, y = (torch.from_numpy(rng.standard_normal((batch, w), dtype=np.float32)).to(device) for _ in range(2))
    return Task(Mlp(w), "mse").to(device), lambda: (x, y)


def read_corpus(repo):
    for path in (os.path.join(repo, "examples/workloads/data/GPL-3.txt"), "/usr/share/common-licenses/GPL-3"):
        if os.path.exists(path):
            with open(path, "rb") as f:
                return f.read()
    raise FileNotFoundError("GPL-3.txt: pass --repo <blaze checkout>")


def run_case(name, regime, mode, args, device):
    batch, seq, workload = shapes(name, args)
    rec = {"workload": workload, "model": name, "regime": regime, "mode": mode, "batch": batch, "seq": seq,
           "attention": args.attention, "lstm": args.lstm, "warmup_steps": args.warmup, "steps": args.steps}
    if cuda := device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    torch._dynamo.reset()  # a fresh compile cache per case: no recompile limits, no reuse
    torch.manual_seed(SEED)
    task, next_batch = build(name, batch, seq, args, device)
    rec["params"] = sum(p.numel() for p in task.parameters())
    training = regime == "training"
    task.train(training)
    model = torch.compile(task) if mode == "compile" else task
    opt = torch.optim.Adam(task.parameters(), lr=3e-4, betas=(0.9, 0.999), eps=1e-8) if training else None

    def step():
        x, y = next_batch()
        if training:
            loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        else:
            with torch.no_grad():
                loss = model(x, y)
        return loss.item()

    start = time.perf_counter()
    for _ in range(args.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    rec["warmup_s"] = round(time.perf_counter() - start, 3)
    samples, losses = [], []
    for _ in range(args.steps):
        t = time.perf_counter()
        losses.append(step())  # ends with loss.item(): the device is idle when the clock stops
        samples.append((time.perf_counter() - t) * 1e3)
    p10, med, p90 = np.percentile(samples, [10, 50, 90]).tolist()
    rec.update(median_ms=med, min_ms=min(samples), p10_ms=p10, p90_ms=p90, mean_ms=float(np.mean(samples)),
               first_loss=losses[0], last_loss=losses[-1],
               samples_ms=[round(s, 4) for s in samples])
    if cuda:
        rec["peak_mem_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return rec


def save(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(SPECS), help="comma list (default: all ten)")
    ap.add_argument("--regime", choices=["forward", "training", "both"], default="both")
    ap.add_argument("--modes", default="eager,compile", help="comma list of eager, compile")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, help="batch (rows for mlp and chain) for every model")
    ap.add_argument("--seq", type=int, help="sequence (columns for chain) for the sequence models")
    ap.add_argument("--attention", choices=["sdpa", "math"], default="sdpa",
                    help="sdpa: F.scaled_dot_product_attention; math: Burn's explicit ops")
    ap.add_argument("--lstm", choices=["cudnn", "loop"], default="cudnn",
                    help="cudnn: nn.LSTM; loop: Burn's per-step recurrence")
    ap.add_argument("--repo", default=".", help="Blaze checkout holding examples/workloads/data")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="torch-results.json")
    args = ap.parse_args()
    models, modes = args.models.split(","), args.modes.split(",")
    bad = [m for m in models if m not in SPECS] + [m for m in modes if m not in ("eager", "compile")]
    if bad or args.steps < 1:
        ap.error(f"unknown: {', '.join(bad)}" if bad else "--steps must be at least 1")
    regimes = ["forward", "training"] if args.regime == "both" else [args.regime]

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = torch.device(args.device)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    doc = {"meta": {"torch": torch.__version__, "cuda": torch.version.cuda,
                    "cudnn": torch.backends.cudnn.version(), "numpy": np.__version__,
                    "python": sys.version.split()[0], "device": device_name, "argv": sys.argv[1:],
                    "tf32": False, "cudnn_benchmark": torch.backends.cudnn.benchmark,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, "results": []}
    for name in models:
        for regime in regimes:
            for mode in modes:
                try:
                    rec = run_case(name, regime, mode, args, device)
                    line = f"median {rec['median_ms']:9.3f} ms  min {rec['min_ms']:9.3f}  " \
                           f"warmup {rec['warmup_s']:7.2f} s  loss {rec['last_loss']}"
                except Exception as e:  # record and go on with the next case
                    batch, seq, workload = shapes(name, args)
                    rec = {"workload": workload, "model": name, "regime": regime, "mode": mode,
                           "batch": batch, "seq": seq, "error": f"{type(e).__name__}: {e}"[:4000]}
                    line = f"FAILED {rec['error'][:200]}"
                rec.update(torch=torch.__version__, device=device_name)
                doc["results"].append(rec)
                save(args.out, doc)
                print(f"{rec['workload']:24s} {regime:8s} {mode:7s} {line}", flush=True)
                gc.collect()
                if device.type == "cuda":
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
