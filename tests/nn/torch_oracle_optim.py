#!/usr/bin/env python3
"""PyTorch as the oracle for pt_adamw, pt_clip_grad_norm and the warm-up +
cosine schedule (pt_optimizer_set_schedule).

  torch_oracle_optim.py LIBPORTABLE_SO [SEED]

Two linear layers with the same weights in libportable (on PORTABLE_BACKEND's
default device, through ctypes) and in torch (CPU, float32) take the same
gradients (of sum(y * g_t) for a new x_t and g_t at each step) over 8 steps:

  * AdamW (weight decay 0.1) after clip_grad_norm_ with max_norm 0.5 (it
    clips): the returned norm and the weights after every step;
  * AdamW with LambdaLR following llm.c's warm-up + cosine (2 warm-up steps,
    6 in all, min_lr lr/10, so steps 7 and 8 run at min_lr);
  * Adam (L2 decay) and SGD with the schedule, the same way.

Within 1e-5 relative to 1 + |value|. Exit 0 on agreement, 1 on any mismatch,
77 (skip) when torch is not importable, except in CI, where that fails.
"""
from torch_oracle_lib import *

pt_linear_sized = sig("pt_linear_sized", P, C.c_int64, C.c_int64)
pt_adamw = sig("pt_adamw", P, P, C.c_double, C.c_double, C.c_double, C.c_double, C.c_double)
pt_adam = sig("pt_adam", P, P, C.c_double, C.c_double, C.c_double, C.c_double, C.c_double)
pt_sgd = sig("pt_sgd", P, P, C.c_double, C.c_double, C.c_double)
pt_optimizer_step = sig("pt_optimizer_step", C.c_int, P)
pt_optimizer_zero_grad = sig("pt_optimizer_zero_grad", C.c_int, P)
pt_optimizer_free = sig("pt_optimizer_free", None, P)
pt_optimizer_set_schedule = sig("pt_optimizer_set_schedule", C.c_int, P, C.c_int64, C.c_int64, C.c_double)
pt_lr_warmup_cosine = sig("pt_lr_warmup_cosine", C.c_double, C.c_double, C.c_double, C.c_int64, C.c_int64,
                          C.c_int64)
pt_clip_grad_norm = sig("pt_clip_grad_norm", P, P, C.c_double)
print(f"optimizer oracle on {pt_device_name(dev).decode()}")
rng = seed_rng(31)
IN, OUT, BATCH, STEPS = 7, 5, 4, 8
WARMUP, TOTAL = 2, 6


def llm_c_lambda(epoch):
    return warmup_cosine_factor(epoch, WARMUP, TOTAL)


def scenario(name, make_pt, make_torch, clip=None, schedule=False):
    lr = 0.05
    lin = torch.nn.Linear(IN, OUT)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(rng.uniform(-1, 1, (OUT, IN)), dtype=torch.float32))
        lin.bias.copy_(torch.tensor(rng.uniform(-1, 1, (OUT,)), dtype=torch.float32))
    m = need(pt_linear_sized(IN, OUT), "pt_linear_sized")
    ok_or_raise(pt_module_to(m, dev), "pt_module_to")
    params = parameters(m)
    for pname, t in (("weight", lin.weight), ("bias", lin.bias)):
        src = upload(t)
        pt_copy_(params[pname], src)
        pt_release(src)
    opt = need(make_pt(m, lr), name)
    topt = make_torch(lin.parameters(), lr)
    sched = None
    if schedule:
        ok_or_raise(pt_optimizer_set_schedule(opt, WARMUP, TOTAL, lr * 0.1), "pt_optimizer_set_schedule")
        sched = torch.optim.lr_scheduler.LambdaLR(topt, llm_c_lambda)
    ok = True
    for step in range(STEPS):
        x = torch.tensor(rng.uniform(-1, 1, (BATCH, IN)), dtype=torch.float32)
        g = torch.tensor(rng.uniform(-1, 1, (BATCH, OUT)), dtype=torch.float32)
        topt.zero_grad()
        (lin(x) * g).sum().backward()
        pt_optimizer_zero_grad(opt)
        px, pg = upload(x), upload(g)
        y = need(pt_module_forward(m, px), "forward")
        prod = need(pt_mul(y, pg), "pt_mul")
        loss = need(pt_sum(prod, PT_ALL, False), "pt_sum")
        ok_or_raise(pt_backward(loss), "pt_backward")
        if clip is not None:
            want = torch.nn.utils.clip_grad_norm_(lin.parameters(), clip)
            total = need(pt_clip_grad_norm(m, clip), "pt_clip_grad_norm")
            ok &= check(f"{name} step {step + 1} norm", download(total), want, quiet=True)
            pt_release(total)
        topt.step()
        if sched:
            sched.step()
        ok_or_raise(pt_optimizer_step(opt), "pt_optimizer_step")
        for pname, t in (("weight", lin.weight), ("bias", lin.bias)):
            ok &= check(f"{name} step {step + 1} {pname}", download(params[pname]), t, quiet=True)
        for p in (px, pg, y, prod, loss):
            pt_release(p)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {STEPS} steps")
    pt_optimizer_free(opt)
    pt_module_free(m)


# The schedule helper itself, against the LambdaLR factor.
for k in range(1, 10):
    got = pt_lr_warmup_cosine(1.0, 0.1, WARMUP, TOTAL, k)
    if abs(got - llm_c_lambda(k - 1)) > 1e-12:
        fail(f"pt_lr_warmup_cosine step {k}: {got} vs {llm_c_lambda(k - 1)}")

scenario("adamw + clip 0.5", lambda m, lr: pt_adamw(m, lr, 0.9, 0.999, 1e-8, 0.1),
         lambda ps, lr: torch.optim.AdamW(ps, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1), clip=0.5)
scenario("adamw + clip 100 (no clipping)", lambda m, lr: pt_adamw(m, lr, 0.9, 0.95, 1e-8, 0.1),
         lambda ps, lr: torch.optim.AdamW(ps, lr=lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1), clip=100.0)
scenario("adamw + warm-up cosine", lambda m, lr: pt_adamw(m, lr, 0.9, 0.95, 1e-8, 0.1),
         lambda ps, lr: torch.optim.AdamW(ps, lr=lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1), schedule=True)
scenario("adam + warm-up cosine", lambda m, lr: pt_adam(m, lr, 0.9, 0.999, 1e-8, 0.01),
         lambda ps, lr: torch.optim.Adam(ps, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01), schedule=True)
scenario("sgd + warm-up cosine + clip 0.5", lambda m, lr: pt_sgd(m, lr, 0.9, 0.0),
         lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9), clip=0.5, schedule=True)

finish("optimizer oracle")
