"""For framework_probe_smoke.sh: Debian 12's PyTorch (1.13) predates
scaled_dot_product_attention; a plain causal attention stands in for it, so that the
probe runs there on the CPU. A PyTorch that has it is left alone."""
import math

try:
    import torch
except ImportError:
    torch = None

if torch is not None and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
    def _attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        s = q @ k.transpose(-2, -1) * (scale or 1 / math.sqrt(q.shape[-1]))
        if is_causal:
            n = q.shape[-2]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return torch.softmax(s, -1) @ v

    torch.nn.functional.scaled_dot_product_attention = _attention
