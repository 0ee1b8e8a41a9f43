"""The "GPUs" chapter of Dive into Deep Learning (PyTorch edition), every code
cell translated line for line to `portable`, printing what the chapter's cells
show. It runs on whatever backend PORTABLE_BACKEND picks:

    PORTABLE_BACKEND=opencl python gpus.py
    PORTABLE_BACKEND=cpu PORTABLE_CPU_DEVICES=2 python gpus.py   # two devices on one cpu

Where the chapter has a CUDA-only call the translation says so in a comment:
`X.cuda(1)` is `X.to(try_gpu(1))`, `!nvidia-smi` is `python -m portable devices`.
"""
import types

import portable
from portable import nn
from portable.__main__ import devices as nvidia_smi  # what `!nvidia-smi` shows

# !nvidia-smi
nvidia_smi()


def cpu():  #@save
    """Get the CPU device."""
    return portable.cpu()


def gpu(i=0):  #@save
    """Get a GPU device."""
    return portable.gpu(i)


print((cpu(), gpu(), gpu(1)))


def num_gpus():  #@save
    """Get the number of available GPUs."""
    return portable.num_gpus()


print(num_gpus())


def try_gpu(i=0):  #@save
    """Return gpu(i) if exists, otherwise return cpu()."""
    if num_gpus() >= i + 1:
        return gpu(i)
    return cpu()


def try_all_gpus():  #@save
    """Return all available GPUs, or [cpu(),] if no GPU exists."""
    return [gpu(i) for i in range(num_gpus())]


print((try_gpu(), try_gpu(10), try_all_gpus()))

x = portable.tensor([1, 2, 3])
print(x.device)

X = portable.ones(2, 3, device=try_gpu())
print(X)

Y = portable.rand(2, 3, device=try_gpu(1))
print(Y)

# The chapter's text: X and Y on different devices cannot be added.
try:
    print(X + Y)
except RuntimeError as e:
    print(f"X + Y: {type(e).__name__}: {e}")

Z = X.to(try_gpu(1))  # Z = X.cuda(1)
print(X)
print(Z)

print(Y + Z)

print(Z.to(try_gpu(1)) is Z)  # Z.cuda(1) is Z

net = nn.Sequential(nn.LazyLinear(1))
net = net.to(device=try_gpu())

print(net(X))

print(net[0].weight.data.device)


d2l = types.SimpleNamespace(gpu=gpu, num_gpus=num_gpus)  # the @save'd functions above


class Trainer:  # the chapter's additions to d2l.Trainer (@d2l.add_to_class)
    def __init__(self, max_epochs, num_gpus=0, gradient_clip_val=0):
        self.max_epochs, self.gradient_clip_val = max_epochs, gradient_clip_val  # save_hyperparameters()
        self.gpus = [d2l.gpu(i) for i in range(min(num_gpus, d2l.num_gpus()))]

    def prepare_batch(self, batch):
        if self.gpus:
            batch = [a.to(self.gpus[0]) for a in batch]
        return batch

    def prepare_model(self, model):
        model.trainer = self
        if self.gpus:
            model.to(self.gpus[0])
        self.model = model


# The chapter trains with these in later sections; here one batch and the model go through them.
trainer = Trainer(max_epochs=1, num_gpus=1)
trainer.prepare_model(net)
batch = trainer.prepare_batch([portable.ones(4, 3), portable.zeros(4, 1)])
print([a.device for a in batch], net[0].weight.data.device)
