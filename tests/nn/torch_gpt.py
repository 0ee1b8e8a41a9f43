"""libportable's pt_gpt written in torch.nn modules, for the PyTorch oracle
(tests/nn/gpt_torch_oracle.py) and the GPT-2 benchmark
(bench/bench_gpt2_torch.py), so that both measure against one model.

Embedding wte and wpe, TransformerEncoderLayer(d, heads, 4 d, dropout 0,
activation "gelu", batch_first, norm_first) blocks in a ModuleList h with a
causal src_mask, LayerNorm ln_f and a Linear head whose weight is wte.weight
(tied). Its state_dict names are the ones pt_save writes, plus the tied
alias lm_head.weight.
"""
import math

import torch


class TorchGPT(torch.nn.Module):
    def __init__(self, vocab_size, context, n_layer, n_head, n_embd):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab_size, n_embd)
        self.wpe = torch.nn.Embedding(context, n_embd)
        self.h = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(n_embd, n_head, 4 * n_embd, dropout=0.0, activation="gelu",
                                             batch_first=True, norm_first=True) for _ in range(n_layer))
        self.ln_f = torch.nn.LayerNorm(n_embd)
        self.lm_head = torch.nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, idx):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))
        causal = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        for block in self.h:
            x = block(x, src_mask=causal)
        return self.lm_head(self.ln_f(x))

    def gpt2_init_(self):
        """GPT-2's initialisation, as pt_gpt's: matrices N(0, 0.02), the
        residual projections N(0, 0.02 / sqrt(2 n_layer)), biases 0; layer
        norms keep torch's ones and zeros."""
        n_layer = len(self.h)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    residual = name.endswith("out_proj.weight") or name.endswith("linear2.weight")
                    p.normal_(0.0, 0.02 / math.sqrt(2 * n_layer) if residual else 0.02)
                elif name.endswith("bias"):
                    p.zero_()
        return self
