#!/usr/bin/env python3
"""PyTorch's side of bench_gpt2.c (CPU, float32), the same work: one training
step of GPT-2 small (vocab 50257, context 1024, 12 layers, 12 heads, width
768, tied head, dropout 0) on B 4 sequences of T 64 tokens: forward,
cross-entropy, backward, torch.optim.AdamW(lr 1e-4, betas 0.9 and 0.999, eps
1e-8, weight decay 0: llm.c's settings), no clipping.

The model is tests/nn/torch_gpt.py's TorchGPT, the class the PyTorch oracle
checks pt_gpt against (torch.nn Embedding, TransformerEncoderLayer blocks
with a causal mask, LayerNorm, a Linear head tied to wte.weight), with
GPT-2's initialisation (matrices N(0, 0.02), the residual projections
N(0, 0.02 / sqrt(24)), biases 0).

  bench_gpt2_torch.py time [warmup [steps]]  (defaults 2 and 5) prints "ms
                          <median wall> min <min wall> cpu <median CPU ms>
                          loss <first> <last> params <n> rss_peak <MiB>"
  bench_gpt2_torch.py isa the ATen CPU capability and the BLAS library
  bench_gpt2_torch.py llmc-files DIR
                          writes what llm.c's train_gpt2 reads, in its
                          formats, into DIR: gpt2_124M.bin (a 256-int32
                          header: magic 20240326, version 3, max_seq_len,
                          vocab, layers, heads, channels, padded vocab 50304;
                          then the f32 parameters, wte padded to 50304 rows,
                          each kind stacked over the layers) with this
                          model's GPT-2-initialised weights, and
                          dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin
                          (a 256-int32 header: magic 20240520, version 1,
                          token count; then uint16 tokens), random tokens.

Threads: torch.set_num_threads(OMP_NUM_THREADS, default 1).
"""
import os
import resource
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn"))
from torch_gpt import TorchGPT  # noqa: E402  (the oracle's model, one definition)

VOCAB, CONTEXT, LAYERS, HEADS, WIDTH = 50257, 1024, 12, 12, 768
BATCH, SEQ = 4, 64
PADDED_VOCAB = 50304  # llm.c pads wte's rows to a multiple of 128
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))


def GPT():
    """GPT-2 small as tests/nn/torch_gpt.py builds pt_gpt, GPT-2-initialised."""
    return TorchGPT(VOCAB, CONTEXT, LAYERS, HEADS, WIDTH).gpt2_init_()


def batch():
    """The same tokens as bench_gpt2.c's (its 64-bit LCG, seed 1337)."""
    s, mask, rows = 1337, (1 << 64) - 1, []
    for _ in range(BATCH):
        row = []
        for _ in range(SEQ + 1):
            s = (s * 6364136223846793005 + 1442695040888963407) & mask
            row.append((s >> 33) % VOCAB)
        rows.append(row)
    t = torch.tensor(rows, dtype=torch.int64)
    return t[:, :SEQ].contiguous(), t[:, 1:].reshape(-1).contiguous()


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x).view(-1, VOCAB), y)
    loss.backward()
    opt.step()
    return loss.item()


def bench_time(warmup, steps):
    torch.manual_seed(1)
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    x, y = batch()
    first = last = 0.0
    for i in range(warmup):
        loss = step(model, opt, x, y)
        first = loss if i == 0 else first
    wall, cpu = [], []
    for i in range(steps):
        w0, c0 = time.perf_counter(), time.process_time()
        last = step(model, opt, x, y)
        wall.append(1e3 * (time.perf_counter() - w0))
        cpu.append(1e3 * (time.process_time() - c0))
        first = last if warmup == 0 and i == 0 else first
    n = sum(p.numel() for p in model.parameters())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ms {statistics.median(wall):.1f} min {min(wall):.1f} cpu {statistics.median(cpu):.1f} "
          f"loss {first:.4f} {last:.4f} params {n} rss_peak {peak:.0f}")


def llmc_files(out):
    """llm.c's checkpoint and token files (formats in the docstring)."""
    torch.manual_seed(1)
    sd = GPT().state_dict()
    header = np.zeros(256, dtype=np.int32)
    header[:8] = [20240326, 3, CONTEXT, VOCAB, LAYERS, HEADS, WIDTH, PADDED_VOCAB]
    wte = np.zeros((PADDED_VOCAB, WIDTH), dtype=np.float32)
    wte[:VOCAB] = sd["wte.weight"].numpy()
    per_layer = ["norm1.weight", "norm1.bias", "self_attn.in_proj_weight", "self_attn.in_proj_bias",
                 "self_attn.out_proj.weight", "self_attn.out_proj.bias", "norm2.weight", "norm2.bias",
                 "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"]
    with open(os.path.join(out, "gpt2_124M.bin"), "wb") as f:
        f.write(header.tobytes())
        f.write(wte.tobytes())
        f.write(sd["wpe.weight"].numpy().astype(np.float32).tobytes())
        for name in per_layer:
            for i in range(LAYERS):
                f.write(sd[f"h.{i}.{name}"].numpy().astype(np.float32).tobytes())
        f.write(sd["ln_f.weight"].numpy().tobytes())
        f.write(sd["ln_f.bias"].numpy().tobytes())
    data = os.path.join(out, "dev", "data", "tinyshakespeare")
    os.makedirs(data, exist_ok=True)
    rng = np.random.default_rng(1337)
    for split, n in (("train", 1 << 16), ("val", 1 << 13)):
        header = np.zeros(256, dtype=np.int32)
        header[:3] = [20240520, 1, n]
        with open(os.path.join(data, f"tiny_shakespeare_{split}.bin"), "wb") as f:
            f.write(header.tobytes())
            f.write(rng.integers(0, VOCAB, size=n, dtype=np.uint16).tobytes())


def isa():
    """bench_attention_torch.py's line (its ATen capability is
    torch.__config__'s, which 1.13 shows where torch.backends.cpu has no
    get_cpu_capability yet)."""
    from bench_attention_torch import isa as torch_isa
    torch.ones(64, 64) @ torch.ones(64, 64)  # loads the BLAS library
    torch_isa()


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "time" and len(sys.argv) <= 4:
        bench_time(int(sys.argv[2]) if len(sys.argv) > 2 else 2, int(sys.argv[3]) if len(sys.argv) > 3 else 5)
    elif what == "llmc-files" and len(sys.argv) == 3:
        llmc_files(sys.argv[2])
    elif what == "isa":
        isa()
    else:
        sys.exit("usage: bench_gpt2_torch.py time [warmup [steps]] | isa | llmc-files DIR")


if __name__ == "__main__":
    main()
