#!/usr/bin/env python3
"""PyTorch as the oracle of pt_gpt: file interchange both ways, then the same
training run on both sides.

  gpt_torch_oracle.py LIBPORTABLE_SO [SEED]

The PyTorch model is torch_gpt.py's TorchGPT, built from torch.nn modules
only (the GPT-2 benchmark measures against the same class).

  * pt_multihead_attention against nn.MultiheadAttention(batch_first) with
    the same weights, with and without biases, causal or not, [B, T, E] and
    [T, E]: the output and the gradients in x and every parameter, within 1e-5.
  * A GPT made by libportable (its GPT-2 initialisation), written by pt_save,
    loads into the PyTorch model with load_state_dict(strict=True) once the
    tied head's alias lm_head.weight is added (the file stores the tied weight
    once, as safetensors' save_model does); the logits agree. Then PyTorch's
    own initialisation, written by PyTorch without the alias, loads into a
    libportable GPT with pt_load; the logits agree.
  * From those same PyTorch-made weights, 50 training steps on batches of
    character indices of a fixed text (the same batches on both sides, drawn
    with a fixed seed), with AdamW (weight decay 0.1), clip_grad_norm_ at 1.0
    and llm.c's warm-up + cosine schedule (LambdaLR in torch), dropout 0, f32:
    each step's loss within 1e-4 relative.

Safetensors files are written and read with the safetensors package when it is
importable, else by torch_oracle_lib.py's own writer and reader (never a skip).
Exit 0 on agreement, 1 on any mismatch, 77 (skip) when torch is not importable
(a failure under CI) or the backend is absent.
"""
import os
import tempfile

from torch_oracle_lib import *
from torch_gpt import TorchGPT


class GptConfig(C.Structure):
    _fields_ = [("vocab_size", C.c_int64), ("context", C.c_int64), ("n_layer", C.c_int64),
                ("n_head", C.c_int64), ("n_embd", C.c_int64), ("dropout", C.c_double)]


pt_gpt = sig("pt_gpt", P, C.POINTER(GptConfig))
pt_multihead_attention = sig("pt_multihead_attention", P, C.c_int64, C.c_int64, C.c_bool, C.c_double, C.c_bool)
pt_reshape = sig("pt_reshape", P, P, C.c_int, C.POINTER(C.c_int64))
pt_cross_entropy = sig("pt_cross_entropy", P, P, P)
pt_item = sig("pt_item", C.c_double, P)
pt_adamw = sig("pt_adamw", P, P, C.c_double, C.c_double, C.c_double, C.c_double, C.c_double)
pt_optimizer_set_schedule = sig("pt_optimizer_set_schedule", C.c_int, P, C.c_int64, C.c_int64, C.c_double)
pt_optimizer_step = sig("pt_optimizer_step", C.c_int, P)
pt_optimizer_zero_grad = sig("pt_optimizer_zero_grad", C.c_int, P)
pt_optimizer_free = sig("pt_optimizer_free", None, P)
pt_clip_grad_norm = sig("pt_clip_grad_norm", P, P, C.c_double)

rng = seed_rng(40)
torch.manual_seed(41)
print(f"GPT oracle on {pt_device_name(dev).decode()}; safetensors through {safetensors_how()}")

TEXT = ("a small model learns the shape of its text one character at a time: which letters follow "
        "which, where the spaces fall, how words end. the same batches and the same weights must give "
        "the same losses on every device and in pytorch, step after step, or something is wrong.")
CHARS = sorted(set(TEXT))
DATA = np.array([CHARS.index(ch) for ch in TEXT], dtype=np.int64)
CFG = dict(vocab_size=len(CHARS), context=16, n_layer=2, n_head=4, n_embd=32)
BATCH, T, STEPS, WARMUP = 4, 16, 50, 5
LR, CLIP, TOL_LOSS = 3e-3, 1.0, 1e-4


def portable_gpt():
    cfg = GptConfig(dropout=0.0, **CFG)
    m = need(pt_gpt(C.byref(cfg)), "pt_gpt")
    ok_or_raise(pt_module_to(m, dev), "pt_module_to")
    return m


def portable_logits(m, idx):
    pi = upload(idx, I64)
    y = need(pt_module_forward(m, pi), "pt_module_forward")
    out = download(y)
    pt_release(pi)
    pt_release(y)
    return out


def batch():
    starts = rng.integers(0, len(DATA) - T - 1, size=BATCH)
    x = np.stack([DATA[s:s + T] for s in starts])
    y = np.stack([DATA[s + 1:s + T + 1] for s in starts])
    return x, y


def check_attention(bias, causal, batched):
    """pt_multihead_attention against torch.nn.MultiheadAttention with the
    same weights (copied by name): output, and the gradients of sum(y * g) in
    x and every parameter."""
    e, h, t, b = 12, 3, 7, 2
    tm = torch.nn.MultiheadAttention(e, h, bias=bias, batch_first=True)
    m = need(pt_multihead_attention(e, h, bias, 0.0, causal), "pt_multihead_attention")
    ok_or_raise(pt_module_to(m, dev), "pt_module_to")
    mine, theirs = parameters(m), dict(tm.named_parameters())
    what = f"attention bias {bias} causal {causal} {'[B, T, E]' if batched else '[T, E]'}"
    if set(mine) != set(theirs):
        fail(f"{what}: names {sorted(mine)} but torch has {sorted(theirs)}")
        return
    for name, p in mine.items():
        src = upload(theirs[name])
        ok_or_raise(pt_copy_(p, src), "pt_copy_")
        pt_release(src)
    shape = (b, t, e) if batched else (t, e)
    x = torch.tensor(rng.uniform(-1, 1, size=shape), dtype=torch.float32, requires_grad=True)
    mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1) if causal else None
    y, _ = tm(x, x, x, attn_mask=mask, need_weights=False)
    g = torch.tensor(rng.uniform(-1, 1, size=y.shape), dtype=torch.float32)
    (y * g).sum().backward()
    px = leaf(x)
    py = need(pt_module_forward(m, px), "pt_module_forward")
    backward_weighted(py, g)
    check(f"{what} y", download(py), y)
    check(f"{what} dx", grad_of(px), x.grad)
    for name, p in mine.items():
        check(f"{what} d {name}", grad_of(p), theirs[name].grad)
    pt_release(px)
    pt_release(py)
    pt_module_free(m)


for bias, causal, batched in ((True, True, True), (True, False, False), (False, True, False), (False, False, True)):
    check_attention(bias, causal, batched)

with tempfile.TemporaryDirectory() as tmp:
    # ---- libportable writes, PyTorch reads ----
    pt_manual_seed(7)
    m = portable_gpt()
    path = os.path.join(tmp, "from_portable.safetensors")
    ok_or_raise(pt_save(m, path.encode()), "pt_save")
    state = read_safetensors(path)
    model = TorchGPT(**CFG)
    want_names = set(model.state_dict()) - {"lm_head.weight"}
    if set(state) != want_names:
        fail(f"pt_save's names differ from torch's: extra {sorted(set(state) - want_names)}, "
             f"missing {sorted(want_names - set(state))}")
    state["lm_head.weight"] = state["wte.weight"]  # the tied alias the file stores once
    model.load_state_dict(state, strict=True)
    model.eval()
    idx, _ = batch()
    with torch.no_grad():
        check("GPT saved by pt_save, logits in torch", portable_logits(m, idx), model(torch.from_numpy(idx)))
    pt_module_free(m)

    # ---- PyTorch writes (its own initialisation), libportable reads ----
    model = TorchGPT(**CFG)
    path = os.path.join(tmp, "from_torch.safetensors")
    write_safetensors(path, {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"})
    m = portable_gpt()
    ok_or_raise(pt_load(m, path.encode(), None), "pt_load")
    idx, _ = batch()
    with torch.no_grad():
        check("GPT saved by torch, logits after pt_load", portable_logits(m, idx), model(torch.from_numpy(idx)))

    # ---- The same training run on both sides, from those weights ----
    model.train()
    topt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(topt, lambda e: warmup_cosine_factor(e, WARMUP, STEPS))
    opt = need(pt_adamw(m, LR, 0.9, 0.95, 1e-8, 0.1), "pt_adamw")
    ok_or_raise(pt_optimizer_set_schedule(opt, WARMUP, STEPS, LR * 0.1), "pt_optimizer_set_schedule")
    flat = (C.c_int64 * 2)(BATCH * T, CFG["vocab_size"])
    worst, first, last = 0.0, None, None
    for step in range(1, STEPS + 1):
        x, y = batch()
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)).reshape(-1, CFG["vocab_size"]),
                                               torch.from_numpy(y).reshape(-1))
        tl.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        topt.step()
        sched.step()

        pt_optimizer_zero_grad(opt)
        px, py = upload(x, I64), upload(y.reshape(-1), I64)
        logits = need(pt_module_forward(m, px), "pt_module_forward")
        rows = need(pt_reshape(logits, 2, flat), "pt_reshape")
        loss = need(pt_cross_entropy(rows, py), "pt_cross_entropy")
        ok_or_raise(pt_backward(loss), "pt_backward")
        pt_release(need(pt_clip_grad_norm(m, CLIP), "pt_clip_grad_norm"))
        ok_or_raise(pt_optimizer_step(opt), "pt_optimizer_step")
        got, want = pt_item(loss), tl.item()
        for p in (px, py, logits, rows, loss):
            pt_release(p)
        rel = abs(got - want) / abs(want)
        worst = max(worst, rel)
        first, last = first or (got, want), (got, want)
        if not rel <= TOL_LOSS:
            fail(f"step {step}: loss {got:.7f}, torch {want:.7f} (relative {rel:.1e} > {TOL_LOSS:.0e})")
    print(f"{'ok  ' if worst <= TOL_LOSS else 'FAIL'} {STEPS} training steps: loss {first[0]:.4f} -> "
          f"{last[0]:.4f} (torch {first[1]:.4f} -> {last[1]:.4f}), worst relative difference {worst:.1e} "
          f"(tolerance {TOL_LOSS:.0e})")
    if not last[1] < 0.8 * first[1]:
        fail(f"the run did not train: torch's loss went {first[1]:.4f} -> {last[1]:.4f}")
    pt_optimizer_free(opt)
    pt_module_free(m)

finish("GPT oracle")
