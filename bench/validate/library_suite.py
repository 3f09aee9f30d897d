#!/usr/bin/env python3
"""Training steps of models built by libraries, not by xdeep (issue 19, item 4).

  python3 library_suite.py --mode single --models hf-gpt2,tv-resnet50 --out single.json
  torchrun --nproc_per_node=2 library_suite.py --mode ddp|fsdp|tp|pp --models ... --out X.json

The networks come from Hugging Face transformers (GPT2LMHeadModel of GPT-2 small, medium,
large and xl; LlamaForCausalLM of a 1B Llama-style config and of Llama 3.2 1B's shape;
BertForMaskedLM of BERT base and large; RobertaForMaskedLM (base), DistilBertForMaskedLM;
MistralForCausalLM and Qwen2ForCausalLM of 1B / 0.5B configs; OPTForCausalLM (OPT-125m);
LlamaForCausalLM in TinyLlama-1.1B's, SmolLM2-360M's and SmolLM2-1.7B's shapes; MistralForCausalLM in
TinyMistral-248M's, OPTForCausalLM in OPT-1.3B's, GPTNeoXForCausalLM in Pythia-410M's,
Qwen2ForCausalLM in Qwen2.5-1.5B's, PhiForCausalLM in Phi-1.5's and StableLmForCausalLM in
StableLM 2 1.6B's;
MistralForCausalLM in H2O-Danube-1.8B's, LlamaForCausalLM in Sheared-LLaMA-1.3B's and
GPT2LMHeadModel in Cerebras-GPT-590M's shapes (held-out run 10); OlmoForCausalLM in OLMo-1B's,
GPTNeoXForCausalLM in Pythia-1B's and Qwen2ForCausalLM in Qwen1.5-0.5B's shapes (held-out run 11);
LlamaForCausalLM in MobileLLM-600M's and H2O-Danube3-500M's, GPTNeoXForCausalLM in Pythia-1.4B's
shapes (held-out run 12); GPTBigCodeForCausalLM in SantaCoder's, LlamaForCausalLM in Falcon3-1B's and
SmolLM-135M's shapes (held-out run 13); GPT2LMHeadModel in Cerebras-GPT-256M's, LlamaForCausalLM in
MobileLLM-1B's and OpenCoder-1.5B's shapes (held-out run 14); GPT2LMHeadModel in Cerebras-GPT-111M's,
LlamaForCausalLM in AMD-Llama-135m's and Qwen2ForCausalLM in Qwen1.5-1.8B's shapes (held-out run 15);
GPTNeoXForCausalLM in Pythia-70M's, GPTBigCodeForCausalLM in TinyStarCoderPy's and Starcoder2ForCausalLM
in StarCoder2-3B's shapes (held-out run 16); LlamaForCausalLM in llama2.c's 42M model's and EuroLLM-1.7B's,
GPTNeoXForCausalLM in Pythia-160M's shapes (held-out run 17); LlamaForCausalLM in llama2.c's 15M model's
and Salamandra-2B's, GPT2LMHeadModel in GPT-SW3-356M's shapes (held-out run 18); LlamaForCausalLM in
smol_llama-101M-GQA's, Qwen2ForCausalLM in Qwen2.5-3B's and GPT2LMHeadModel in ruGPT-3 Large's shapes
(held-out run 19);
from_config, random weights, no download), torchvision (ResNet-18, -34, -50, -101, -152,
Wide ResNet-50-2 and -101-2, VGG-16, ViT-B/16, ViT-L/16) and timm (ViT-L/16, ViT-B/32,
ViT-L/32, ViT-H/14, ViT-B/8, ViT-S/8, DeiT-S, DeiT-Ti, DeiT III Medium, ViT-B/16 at 384 px, and
ResNet-26, ResNet-101 and ResNet-200, trained as the CNNs above; torchvision's ResNet-152 also at
176 px; held-out run 14: timm's ViT-Ti/16 at 384 px and torchvision's Wide ResNet-50-2 at 288 px;
held-out run 15: timm's ViT-S/16 at 384 px and ResNet-50 at 160 px; held-out run 16: timm's ViT-B/16
at 512 px and torchvision's EfficientNet-B2 at 260 px, its ResNet-101 at 256 px the fallback; held-out
run 17: timm's ViT-L/16 at 320 px and torchvision's ConvNeXt-S at 192 px; held-out run 18: timm's ViT-L/32
at 384 px and torchvision's RegNetY-8GF; held-out run 19: timm's ViT-g/14 and torchvision's ResNeXt-101
32x8d).
They are trained the way those libraries' own recipes train them: transformers' Trainer
with bf16=True (autocast) and its default optimizer (fused AdamW, `adamw_torch_fused`), the
model's default attention (SDPA) and dropout; torchvision's classification reference
(channels_last, SGD with momentum for the ResNets, AdamW for ViT) and timm's ViT recipe
(AdamW, NCHW), under bf16 autocast. Data parallelism is PyTorch's DDP and FSDP2
(fully_shard per block, bf16 parameters for the transformers); tensor and pipeline
parallelism are PyTorch's own torch.distributed.tensor.parallel (Megatron-style column /
row split of the Llama blocks' projections) and torch.distributed.pipelining (two stages,
1F1B schedule over 4 micro-batches), since PyPI (torchtitan, megatron-core) is not
reachable from the build machine.

Per configuration: warm-up steps, then timed steps (CUDA-synchronised wall time, the
median), at least --steps of them and, with --min-seconds, as many more as fill that window
(launch-bound steps of 15-60 ms sample the host's speed, which switches between levels within
seconds: a handful of them spread 10-20 %; the ranks agree on the count), and
torch.cuda.max_memory_allocated over the timed steps, the largest over the ranks. Micro-batches are swept in the order given until one does not fit (out of memory
ends the sweep for that model). TP=2 and PP=2 (--rounds, from session 26): every micro-batch's
warm-up first, then the micro-batches take turns over the rounds, so that each one's median spans
the same seconds of the host (their steps are host-bound and the host's level moves within seconds). The output is measure_pytorch.py's format
({"meta", "runs"}), which `xdeep_validate compare --workloads DIR` reads.
"""
import argparse
import datetime
import gc
import json
import os
import socket
import statistics
import sys
import time

T_START = time.time()

# A lane's start is host work too: with --lane-lock the lock is held from before torch is
# imported until main() has imported the libraries and made CUDA's context. Imported as a module
# (plan_build_check.py) it does nothing.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lane_lock import LaneLock, lane_lock_arg  # noqa: E402  (no torch in it)

LANE = LaneLock(lane_lock_arg(sys.argv) if __name__ == "__main__" else None)
LANE.enter("host")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

SEQ = 1024
IMAGE = 224

TRANSFORMERS = {
    # name: (kind, config kwargs)
    "hf-gpt2": ("gpt2", dict(n_embd=768, n_layer=12, n_head=12)),
    "hf-gpt2-medium": ("gpt2", dict(n_embd=1024, n_layer=24, n_head=16)),
    "hf-gpt2-large": ("gpt2", dict(n_embd=1280, n_layer=36, n_head=20)),
    "hf-gpt2-xl": ("gpt2", dict(n_embd=1600, n_layer=48, n_head=25)),
    "hf-llama-1b": ("llama", dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16,
                                  num_attention_heads=16, num_key_value_heads=8, vocab_size=32000)),
    # BertConfig's defaults are BERT-base; sequences of its 512 positions.
    "hf-bert-base": ("bert", dict()),
    "hf-bert-large": ("bert", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                   intermediate_size=4096)),
    "hf-mistral-1b": ("mistral", dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=16,
                                      num_attention_heads=16, num_key_value_heads=4, vocab_size=32000)),
    # Qwen2-0.5B's shape (QKV biases, tied head, 151936-word vocabulary).
    "hf-qwen2-0.5b": ("qwen2", dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                                    num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                                    tie_word_embeddings=True)),
    # RoBERTa-base (RobertaForMaskedLM): roberta-base's positions (514: ids start past the
    # padding index) and its single token type; DistilBERT-base (DistilBertForMaskedLM):
    # DistilBertConfig's defaults, 6 layers.
    "hf-roberta-base": ("roberta", dict(vocab_size=50265, max_position_embeddings=514,
                                        type_vocab_size=1)),
    "hf-distilbert-base": ("distilbert", dict(vocab_size=30522)),
    # OPTForCausalLM: OPTConfig's defaults are OPT-125m (separate q, k, v; ReLU; biases).
    "hf-opt-125m": ("opt", dict(vocab_size=50272)),
    # Llama 3.2 1B's shape (32 heads of 64, 8 key-value heads, MLP 8192, 128256-word
    # vocabulary, tied head).
    "hf-llama32-1b": ("llama", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                    num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                                    tie_word_embeddings=True)),
    # TinyLlama-1.1B's shape (22 layers, 32 heads of 64, 4 key-value heads) and SmolLM2-360M's
    # (32 layers of hidden 960, 15 heads, 5 key-value heads, tied head): LlamaForCausalLM too.
    "hf-tinyllama-1.1b": ("llama", dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                                        num_attention_heads=32, num_key_value_heads=4, vocab_size=32000)),
    "hf-smollm2-360m": ("llama", dict(hidden_size=960, intermediate_size=2560, num_hidden_layers=32,
                                      num_attention_heads=15, num_key_value_heads=5, vocab_size=49152,
                                      tie_word_embeddings=True)),
    # TinyMistral-248M's shape (MistralForCausalLM: 12 layers of hidden 1024, 32 heads of 32,
    # 8 key-value heads, a 32005-word vocabulary, untied head) and OPT-1.3B's (OPTForCausalLM:
    # 24 layers of hidden 2048, 32 heads, MLP 8192, tied head).
    "hf-tinymistral-248m": ("mistral", dict(hidden_size=1024, intermediate_size=4096,
                                            num_hidden_layers=12, num_attention_heads=32,
                                            num_key_value_heads=8, vocab_size=32005)),
    "hf-opt-1.3b": ("opt", dict(hidden_size=2048, num_hidden_layers=24, ffn_dim=8192,
                                num_attention_heads=32, word_embed_proj_dim=2048, vocab_size=50272)),
    # Pythia-410M's shape (GPTNeoXForCausalLM: 24 layers of hidden 1024, 16 heads, fused QKV,
    # partial rotary and parallel residual at GPTNeoXConfig's defaults, untied head) and
    # Qwen2.5-1.5B's (Qwen2ForCausalLM: 28 layers of hidden 1536, 12 heads of 128, 2 key-value
    # heads, MLP 8960, tied head).
    "hf-pythia-410m": ("gpt_neox", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                        intermediate_size=4096, vocab_size=50304)),
    "hf-qwen2.5-1.5b": ("qwen2", dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                                      num_attention_heads=12, num_key_value_heads=2, vocab_size=151936,
                                      tie_word_embeddings=True)),
    # Phi-1.5's shape (PhiForCausalLM: 24 layers of hidden 2048, 32 heads, gelu_new MLP 8192,
    # biases, one LayerNorm per parallel block, half-rotary, untied 51200-word head) and
    # StableLM 2 1.6B's (StableLmForCausalLM: 24 layers of hidden 2048, 32 heads, SwiGLU 5632,
    # LayerNorm, q/k/v biases, quarter-rotary, untied 100352-word head).
    "hf-phi-1.5": ("phi", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
                               num_attention_heads=32, vocab_size=51200)),
    "hf-stablelm-2-1.6b": ("stablelm", dict(hidden_size=2048, intermediate_size=5632,
                                            num_hidden_layers=24, num_attention_heads=32,
                                            num_key_value_heads=32, vocab_size=100352,
                                            use_qkv_bias=True)),
    # SmolLM2-1.7B's shape (LlamaForCausalLM: 24 layers of hidden 2048, 32 heads, 32 key-value
    # heads, MLP 8192, tied 49152-word head).
    "hf-smollm2-1.7b": ("llama", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
                                      num_attention_heads=32, num_key_value_heads=32, vocab_size=49152,
                                      tie_word_embeddings=True)),
    # Held-out run 10: H2O-Danube-1.8B's shape (MistralForCausalLM: 24 layers of hidden 2560, 32
    # heads of 80, 8 key-value heads, SwiGLU 6912, untied 32000-word head), Sheared-LLaMA-1.3B's
    # (LlamaForCausalLM: 24 layers of hidden 2048, 16 heads, SwiGLU 5504, untied 32000-word head)
    # and Cerebras-GPT-590M's (GPT2LMHeadModel: 18 layers of hidden 1536, 12 heads, MLP 6144,
    # exact GELU, tied head).
    "hf-danube-1.8b": ("mistral", dict(hidden_size=2560, intermediate_size=6912, num_hidden_layers=24,
                                       num_attention_heads=32, num_key_value_heads=8, vocab_size=32000)),
    "hf-sheared-llama-1.3b": ("llama", dict(hidden_size=2048, intermediate_size=5504,
                                            num_hidden_layers=24, num_attention_heads=16,
                                            num_key_value_heads=16, vocab_size=32000)),
    "hf-cerebras-gpt-590m": ("gpt2", dict(n_embd=1536, n_layer=18, n_head=12, n_inner=6144,
                                          activation_function="gelu")),
    # Held-out run 11: OLMo-1B's shape (OlmoForCausalLM: 16 layers of hidden 2048, 16 heads,
    # SwiGLU 8192, LayerNorm without weights, tied 50304-word head), Pythia-1B's
    # (GPTNeoXForCausalLM: 16 layers of hidden 2048, 8 heads of 256, GELU MLP 8192, untied
    # 50304-word head; rotary and parallel residual at GPTNeoXConfig's defaults) and
    # Qwen1.5-0.5B's (Qwen2ForCausalLM: 24 layers of hidden 1024, 16 heads, 16 key-value heads,
    # SwiGLU 2816, tied 151936-word head).
    "hf-olmo-1b": ("olmo", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                num_attention_heads=16, num_key_value_heads=16, vocab_size=50304,
                                tie_word_embeddings=True)),
    "hf-pythia-1b": ("gpt_neox", dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=8,
                                      intermediate_size=8192, vocab_size=50304)),
    "hf-qwen1.5-0.5b": ("qwen2", dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=24,
                                      num_attention_heads=16, num_key_value_heads=16, vocab_size=151936,
                                      tie_word_embeddings=True)),
    # Held-out run 12: MobileLLM-600M's shape (LlamaForCausalLM: 40 layers of hidden 1152, 18 heads,
    # 6 key-value heads, SwiGLU 3072, tied 32000-word head), Pythia-1.4B's (GPTNeoXForCausalLM: 24
    # layers of hidden 2048, 16 heads of 128, GELU MLP 8192, untied 50304-word head) and
    # H2O-Danube3-500M's (LlamaForCausalLM: 16 layers of hidden 1536, 16 heads of 96, 8 key-value
    # heads, SwiGLU 4096, untied 32000-word head).
    "hf-mobilellm-600m": ("llama", dict(hidden_size=1152, intermediate_size=3072, num_hidden_layers=40,
                                        num_attention_heads=18, num_key_value_heads=6, vocab_size=32000,
                                        tie_word_embeddings=True)),
    "hf-pythia-1.4b": ("gpt_neox", dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
                                        intermediate_size=8192, vocab_size=50304)),
    "hf-danube3-500m": ("llama", dict(hidden_size=1536, intermediate_size=4096, num_hidden_layers=16,
                                      num_attention_heads=16, num_key_value_heads=8, vocab_size=32000,
                                      tie_word_embeddings=False)),
    # Held-out run 13: SantaCoder's shape (GPTBigCodeForCausalLM: 24 layers of hidden 2048, 16 heads
    # of 128 sharing one key-value head (multi_query), GELU (tanh) MLP 8192, tied 49280-word head),
    # Falcon3-1B's (LlamaForCausalLM: 18 layers of hidden 2048, 8 heads of 256, 4 key-value heads,
    # SwiGLU 8192, untied 131072-word head) and SmolLM-135M's (LlamaForCausalLM: 30 layers of hidden
    # 576, 9 heads, 3 key-value heads, SwiGLU 1536, tied 49152-word head).
    "hf-santacoder-1.1b": ("gpt_bigcode", dict(n_embd=2048, n_layer=24, n_head=16, n_inner=8192,
                                               multi_query=True, vocab_size=49280,
                                               activation_function="gelu_pytorch_tanh")),
    "hf-falcon3-1b": ("llama", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=18,
                                    num_attention_heads=8, num_key_value_heads=4, vocab_size=131072,
                                    tie_word_embeddings=False)),
    "hf-smollm-135m": ("llama", dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                     num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                                     tie_word_embeddings=True)),
    # Held-out run 14: Cerebras-GPT-256M's shape (GPT2LMHeadModel: 14 layers of hidden 1088, 17 heads
    # of 64, MLP 4352, exact GELU, tied 50257-word head), MobileLLM-1B's (LlamaForCausalLM: 54 layers
    # of hidden 1280, 20 heads, 5 key-value heads, SwiGLU 3584, tied 32000-word head) and
    # OpenCoder-1.5B's (LlamaForCausalLM: 24 layers of hidden 2240, 14 heads of 160, 14 key-value
    # heads, SwiGLU 6144, untied 96640-word head).
    "hf-cerebras-gpt-256m": ("gpt2", dict(n_embd=1088, n_layer=14, n_head=17, n_inner=4352,
                                          activation_function="gelu")),
    "hf-mobilellm-1b": ("llama", dict(hidden_size=1280, intermediate_size=3584, num_hidden_layers=54,
                                      num_attention_heads=20, num_key_value_heads=5, vocab_size=32000,
                                      tie_word_embeddings=True)),
    "hf-opencoder-1.5b": ("llama", dict(hidden_size=2240, intermediate_size=6144, num_hidden_layers=24,
                                        num_attention_heads=14, num_key_value_heads=14, vocab_size=96640,
                                        tie_word_embeddings=False)),
    # Held-out run 15: Cerebras-GPT-111M's shape (GPT2LMHeadModel: 10 layers of hidden 768, 12 heads,
    # MLP 3072, exact GELU, tied 50257-word head), AMD-Llama-135m's (LlamaForCausalLM: 12 layers of
    # hidden 768, 12 heads, 12 key-value heads, SwiGLU 2048, untied 32000-word head) and
    # Qwen1.5-1.8B's (Qwen2ForCausalLM: 24 layers of hidden 2048, 16 heads of 128, 16 key-value heads,
    # SwiGLU 5504, untied 151936-word head).
    "hf-cerebras-gpt-111m": ("gpt2", dict(n_embd=768, n_layer=10, n_head=12, n_inner=3072,
                                          activation_function="gelu")),
    "hf-amd-llama-135m": ("llama", dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                                        num_attention_heads=12, num_key_value_heads=12, vocab_size=32000,
                                        tie_word_embeddings=False)),
    "hf-qwen1.5-1.8b": ("qwen2", dict(hidden_size=2048, intermediate_size=5504, num_hidden_layers=24,
                                      num_attention_heads=16, num_key_value_heads=16, vocab_size=151936,
                                      tie_word_embeddings=False)),
    # Held-out run 16 (one GPU): Pythia-70M's shape (GPTNeoXForCausalLM: 6 layers of hidden 512, 8
    # heads, GELU MLP 2048, untied 50304-word head; rotary and parallel residual at GPTNeoXConfig's
    # defaults), TinyStarCoderPy's (GPTBigCodeForCausalLM: 20 layers of hidden 768, 12 heads sharing
    # one key-value head (multi_query), GELU (tanh) MLP 3072, tied 49152-word head) and StarCoder2-3B's
    # (Starcoder2ForCausalLM: 30 layers of hidden 3072, 24 heads of 128, 2 key-value heads, GELU
    # (tanh) MLP 12288, biases, LayerNorm, rotary, tied 49152-word head; no sliding window: the
    # published 4096 is longer than the sequence).
    "hf-pythia-70m": ("gpt_neox", dict(hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                                       intermediate_size=2048, vocab_size=50304)),
    "hf-tiny-starcoder-py": ("gpt_bigcode", dict(n_embd=768, n_layer=20, n_head=12, n_inner=3072,
                                                 multi_query=True, vocab_size=49152,
                                                 activation_function="gelu_pytorch_tanh")),
    "hf-starcoder2-3b": ("starcoder2", dict(hidden_size=3072, intermediate_size=12288, num_hidden_layers=30,
                                            num_attention_heads=24, num_key_value_heads=2, vocab_size=49152,
                                            hidden_act="gelu_pytorch_tanh", use_bias=True,
                                            tie_word_embeddings=True)),
    # Held-out run 17: llama2.c's 42M model's shape (LlamaForCausalLM: 8 layers of hidden 512, 8 heads,
    # 8 key-value heads, SwiGLU 1376, tied 32000-word head), EuroLLM-1.7B's (LlamaForCausalLM: 24
    # layers of hidden 2048, 16 heads of 128, 8 key-value heads, SwiGLU 5632, untied 128000-word head)
    # and Pythia-160M's (GPTNeoXForCausalLM: 12 layers of hidden 768, 12 heads, GELU MLP 3072, untied
    # 50304-word head; rotary and parallel residual at GPTNeoXConfig's defaults).
    "hf-llama2c-42m": ("llama", dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=8,
                                     num_attention_heads=8, num_key_value_heads=8, vocab_size=32000,
                                     tie_word_embeddings=True)),
    "hf-eurollm-1.7b": ("llama", dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=24,
                                      num_attention_heads=16, num_key_value_heads=8, vocab_size=128000,
                                      tie_word_embeddings=False)),
    "hf-pythia-160m": ("gpt_neox", dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                        intermediate_size=3072, vocab_size=50304)),
    # Held-out run 18: llama2.c's 15M model's shape (LlamaForCausalLM: 6 layers of hidden 288, 6 heads
    # of 48, 6 key-value heads, SwiGLU 768, tied 32000-word head), Salamandra-2B's (LlamaForCausalLM: 24
    # layers of hidden 2048, 16 heads of 128, 16 key-value heads, SwiGLU 5440, untied 256000-word head)
    # and GPT-SW3-356M's (GPT2LMHeadModel: 24 layers of hidden 1024, 16 heads, MLP 4096, exact GELU,
    # tied 64000-word head).
    "hf-llama2c-15m": ("llama", dict(hidden_size=288, intermediate_size=768, num_hidden_layers=6,
                                     num_attention_heads=6, num_key_value_heads=6, vocab_size=32000,
                                     tie_word_embeddings=True)),
    "hf-salamandra-2b": ("llama", dict(hidden_size=2048, intermediate_size=5440, num_hidden_layers=24,
                                       num_attention_heads=16, num_key_value_heads=16, vocab_size=256000,
                                       tie_word_embeddings=False)),
    "hf-gpt-sw3-356m": ("gpt2", dict(n_embd=1024, n_layer=24, n_head=16, n_inner=4096,
                                     activation_function="gelu", vocab_size=64000)),
    # Held-out run 19: smol_llama-101M-GQA's shape (LlamaForCausalLM: 6 layers of hidden 768, 24 heads of
    # 32, 8 key-value heads, SwiGLU 3072, untied 32128-word head), Qwen2.5-3B's (Qwen2ForCausalLM: 36
    # layers of hidden 2048, 16 heads of 128, 2 key-value heads, SwiGLU 11008, tied 151936-word head) and
    # ruGPT-3 Large's (GPT2LMHeadModel: 24 layers of hidden 1536, 16 heads of 96, MLP 6144, gelu_new,
    # tied 50257-word head).
    "hf-smol-llama-101m": ("llama", dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=6,
                                         num_attention_heads=24, num_key_value_heads=8, vocab_size=32128,
                                         tie_word_embeddings=False)),
    "hf-qwen2.5-3b": ("qwen2", dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36,
                                    num_attention_heads=16, num_key_value_heads=2, vocab_size=151936,
                                    tie_word_embeddings=True)),
    "hf-rugpt3-large": ("gpt2", dict(n_embd=1536, n_layer=24, n_head=16, n_inner=6144,
                                     activation_function="gelu_new", vocab_size=50257)),
}
SEQ_OF = {"bert": 512, "roberta": 512, "distilbert": 512}
VISION = {"tv-resnet50": "resnet50", "tv-vit-b16": "vit_b_16", "tv-resnet152": "resnet152",
          "tv-resnet101": "resnet101", "tv-vit-l16": "vit_l_16",
          "timm-vit-l16": "timm:vit_large_patch16_224", "tv-resnet34": "resnet34",
          "timm-deit-s": "timm:deit_small_patch16_224", "tv-resnet18": "resnet18",
          "timm-deit-tiny": "timm:deit_tiny_patch16_224", "timm-vit-b32": "timm:vit_base_patch32_224",
          "tv-vgg16": "vgg16", "timm-vit-l32": "timm:vit_large_patch32_224",
          "tv-wide-resnet50": "wide_resnet50_2", "timm-vit-h14": "timm:vit_huge_patch14_224",
          "tv-wide-resnet101": "wide_resnet101_2", "timm-vit-b8": "timm:vit_base_patch8_224",
          "timm-resnet26": "timm:resnet26", "timm-vit-s8": "timm:vit_small_patch8_224",
          "timm-resnet101": "timm:resnet101", "timm-deit3-m16": "timm:deit3_medium_patch16_224",
          "timm-resnet200": "timm:resnet200", "timm-vit-b16-384": "timm:vit_base_patch16_384",
          "tv-resnet152-176": "resnet152", "timm-vit-ti16-384": "timm:vit_tiny_patch16_384",
          "tv-wide-resnet50-288": "wide_resnet50_2", "timm-vit-s16-384": "timm:vit_small_patch16_384",
          "timm-resnet50-160": "timm:resnet50", "timm-vit-b16-512": "timm:vit_base_patch16_224",
          "tv-resnet101-256": "resnet101", "tv-efficientnet-b2-260": "efficientnet_b2",
          "timm-vit-l16-320": "timm:vit_large_patch16_224", "tv-convnext-small-192": "convnext_small",
          "timm-vit-l32-384": "timm:vit_large_patch32_384", "tv-regnet-y-8gf": "regnet_y_8gf",
          "timm-vit-g14": "timm:vit_giant_patch14_224", "tv-resnext101-32x8d": "resnext101_32x8d"}
CNNS = {"tv-resnet18", "tv-resnet34", "tv-resnet50", "tv-resnet101", "tv-resnet152", "tv-vgg16",
        "tv-wide-resnet50", "tv-wide-resnet101",
        "timm-resnet26", "timm-resnet101", "timm-resnet200",
        "tv-resnet152-176", "tv-wide-resnet50-288",
        "timm-resnet50-160", "tv-resnet101-256", "tv-efficientnet-b2-260",
        "tv-convnext-small-192", "tv-regnet-y-8gf", "tv-resnext101-32x8d"}  # channels_last (torchvision's reference), SGD
# Input sides other than IMAGE: timm's ViT-B/16 and ViT-Ti/16 at their 384 px resolution (577
# tokens), torchvision's ResNet-152 at its current recipe's 176 px training crop
# (--train-crop-size 176) and its Wide ResNet-50-2 at 288 px (a fine-tuning resolution); timm's
# ViT-S/16 at 384 px and its ResNet-50 at 160 px ("ResNet strikes back" A3's training resolution);
# held-out run 16: timm's ViT-B/16 at 512 px (1025 tokens; its position table made for that side),
# torchvision's ResNet-101 at 256 px (the CNN slot's fallback) and EfficientNet-B2 at its own 260 px;
# held-out run 17: timm's ViT-L/16 at 320 px (401 tokens; its position table made for that side) and
# torchvision's ConvNeXt-S at 192 px; held-out run 18: timm's ViT-L/32 at its 384 px (145 tokens).
IMAGE_OF = {"timm-vit-b16-384": 384, "tv-resnet152-176": 176, "timm-vit-ti16-384": 384,
            "tv-wide-resnet50-288": 288, "timm-vit-s16-384": 384, "timm-resnet50-160": 160,
            "timm-vit-b16-512": 512, "tv-resnet101-256": 256, "tv-efficientnet-b2-260": 260,
            "timm-vit-l16-320": 320, "tv-convnext-small-192": 192, "timm-vit-l32-384": 384}


def seq_of(name):
    return SEQ_OF.get(TRANSFORMERS[name][0], SEQ)


def build(name, device):
    """The model with random weights, on `device`. A model built for a GPU is initialised on it (the
    `torch.device` context): its parameters are made and drawn there, not drawn on the CPU and copied
    over, which took ~13 s a billion parameters on the CPU (run 17's EuroLLM-1.7B: 22 s in each mode) --
    host work that the other single-GPU lane's steps wait out under --lane-lock and that each two-GPU
    mode's ranks repeat. The weights are random either way; no step, peak or steady figure is measured
    before the warm-up steps, so where they were drawn changes no measurement."""
    if torch.device(device).type == "cpu":
        return _build(name, device)
    with torch.device(device):
        return _build(name, device)


def _build(name, device):
    if name in TRANSFORMERS:
        import transformers
        kind, kw = TRANSFORMERS[name]
        if kind == "gpt2":
            cfg = transformers.GPT2Config(n_positions=SEQ, **{"vocab_size": 50257, **kw})  # GPT-2's unless set
            model = transformers.GPT2LMHeadModel(cfg)
        elif kind == "bert":
            model = transformers.BertForMaskedLM(transformers.BertConfig(**kw))
        elif kind == "roberta":
            model = transformers.RobertaForMaskedLM(transformers.RobertaConfig(**kw))
        elif kind == "distilbert":
            model = transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(**kw))
        elif kind == "opt":
            model = transformers.OPTForCausalLM(transformers.OPTConfig(max_position_embeddings=SEQ, **kw))
        elif kind == "gpt_neox":
            model = transformers.GPTNeoXForCausalLM(
                transformers.GPTNeoXConfig(max_position_embeddings=SEQ, **kw))
        elif kind == "gpt_bigcode":
            model = transformers.GPTBigCodeForCausalLM(transformers.GPTBigCodeConfig(n_positions=SEQ, **kw))
        else:
            config, causal_lm = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
                                 "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
                                 "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
                                 "olmo": (transformers.OlmoConfig, transformers.OlmoForCausalLM),
                                 "phi": (transformers.PhiConfig, transformers.PhiForCausalLM),
                                 "stablelm": (transformers.StableLmConfig,
                                              transformers.StableLmForCausalLM),
                                 "starcoder2": (transformers.Starcoder2Config,
                                                transformers.Starcoder2ForCausalLM)}[kind]
            model = causal_lm(config(max_position_embeddings=SEQ, **kw))
        return model.to(device)
    if VISION[name].startswith("timm:"):
        import timm
        # A ViT is built for its input side (position embeddings); a CNN takes any side.
        size = {"img_size": IMAGE_OF[name]} if name in IMAGE_OF and name not in CNNS else {}
        model = timm.create_model(VISION[name][5:], num_classes=1000, **size).to(device)
        return model.to(memory_format=torch.channels_last) if name in CNNS else model
    import torchvision
    model = getattr(torchvision.models, VISION[name])(num_classes=1000)
    return model.to(device, memory_format=torch.channels_last)


def blocks(model):
    """The repeated blocks: FSDP2's units, the pipeline's split."""
    if hasattr(model, "transformer"):
        return list(model.transformer.h)
    if hasattr(model, "bert"):
        return list(model.bert.encoder.layer)
    if hasattr(model, "roberta"):
        return list(model.roberta.encoder.layer)
    if hasattr(model, "distilbert"):
        return list(model.distilbert.transformer.layer)
    if hasattr(model, "gpt_neox"):
        return list(model.gpt_neox.layers)
    if hasattr(model, "model") and hasattr(model.model, "decoder"):  # OPT
        return list(model.model.decoder.layers)
    if hasattr(model, "blocks"):  # timm ViT
        return list(model.blocks)
    if hasattr(model, "model") and hasattr(model.model, "layers"):
        return list(model.model.layers)
    if hasattr(model, "encoder"):  # torchvision ViT
        return list(model.encoder.layers)
    if hasattr(model, "features"):  # torchvision EfficientNet, ConvNeXt, MobileNet, VGG: their stages
        return list(model.features)
    if hasattr(model, "trunk_output"):  # torchvision RegNet
        return list(model.trunk_output)
    return [m for layer in (model.layer1, model.layer2, model.layer3, model.layer4) for m in layer]


class Optimizers:
    """One optimizer per kind of parameter: fused AdamW takes plain tensors or DTensors
    (tensor parallelism's sharded weights), not both in one call."""

    def __init__(self, name, params):
        from torch.distributed.tensor import DTensor
        params = list(params)
        groups = [[p for p in params if isinstance(p, DTensor)],
                  [p for p in params if not isinstance(p, DTensor)]]
        self.opts = [optimizer_for(name, g) for g in groups if g]

    def step(self):
        for o in self.opts:
            o.step()

    def zero_grad(self, set_to_none=True):
        for o in self.opts:
            o.zero_grad(set_to_none=set_to_none)


def optimizer_for(name, params):
    if name in CNNS:
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)
    if name in VISION:  # ViTs: torchvision's and timm's recipes, foreach (torch's default)
        return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.3)
    return torch.optim.AdamW(params, lr=5e-5, weight_decay=0.0, fused=True)  # Trainer's default


def batch_for(name, mb, device):
    if name in TRANSFORMERS:
        kind, kw = TRANSFORMERS[name]
        vocab = kw.get("vocab_size", 30522 if kind == "bert" else 50257)
        ids = torch.randint(0, vocab, (mb, seq_of(name)), device=device)
        return ids, ids
    side = IMAGE_OF.get(name, IMAGE)
    x = torch.randn(mb, 3, side, side, device=device)
    if name in CNNS:
        x = x.to(memory_format=torch.channels_last)
    return x, torch.randint(0, 1000, (mb,), device=device)


def loss_of(name, model, x, y):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        if name in TRANSFORMERS:
            return model(input_ids=x, labels=y).loss
        return torch.nn.functional.cross_entropy(model(x), y)


class PipelinePart(torch.nn.Module):
    """One of two pipeline stages of a transformers decoder: the embeddings and the first
    half of the blocks, or the second half, the final norm and the head."""

    def __init__(self, model, first):
        super().__init__()
        self.first = first
        self.llama = hasattr(model, "model")
        core = model.model if self.llama else model.transformer
        layers = blocks(model)
        half = len(layers) // 2
        self.layers = torch.nn.ModuleList(layers[:half] if first else layers[half:])
        if self.llama:
            self.rotary = core.rotary_emb
        if first:
            self.embed = core.embed_tokens if self.llama else core.wte
            self.pos = None if self.llama else core.wpe
        else:
            self.norm = core.norm if self.llama else core.ln_f
            self.head = model.lm_head

    def forward(self, h):
        if self.first:
            ids = h
            h = self.embed(ids)
            if self.pos is not None:
                h = h + self.pos(torch.arange(ids.shape[1], device=ids.device))[None]
        pos = torch.arange(h.shape[1], device=h.device)[None]
        kw = {}
        if self.llama:
            kw = {"position_ids": pos, "position_embeddings": self.rotary(h, pos)}
        for layer in self.layers:
            out = layer(h, **kw)
            h = out[0] if isinstance(out, tuple) else out
        if not self.first:
            h = self.head(self.norm(h))
        return h


def wrap(name, model, mode, rank, world):
    """The model as `mode` trains it, and what the step calls."""
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model, device_ids=[rank])
    if mode == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
            if name not in CNNS else MixedPrecisionPolicy()
        for b in blocks(model):
            fully_shard(b, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
        return model
    if mode == "tp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                       parallelize_module)
        mesh = init_device_mesh("cuda", (world,))
        plan = {"self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
                "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(),
                "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
                "mlp.down_proj": RowwiseParallel()}
        for layer in blocks(model):
            parallelize_module(layer, mesh, plan)
        return model
    return model


MAX_WINDOW_STEPS = 200


def measure(name, model, opt, step, mb, device, warmup, steps, min_seconds=0.0, world=1):
    for _ in range(warmup):
        step(mb)
    torch.cuda.synchronize(device)
    steady = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    times = []

    def timed(n):
        for _ in range(n):
            t0 = time.perf_counter()
            step(mb)
            torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t0)

    timed(steps)
    # As many more steps as fill the window at this speed; every rank runs the most any
    # rank asks for (a collective step must run on all of them).
    more = 0
    if min_seconds > sum(times):
        more = min(MAX_WINDOW_STEPS, int((min_seconds - sum(times)) / statistics.median(times)) + 1)
    if world > 1 and min_seconds > 0:
        n = torch.tensor([float(more)], device=device)
        dist.all_reduce(n, op=dist.ReduceOp.MAX)
        more = int(n.item())
    timed(more)
    return {"step_time_median_s": statistics.median(times), "step_times_s": times,
            "peak_allocated_bytes": int(torch.cuda.max_memory_allocated(device)),
            "steady_allocated_bytes": int(steady)}


# TP=2 and PP=2 (--rounds): the micro-batches of a model take turns. Their steps are the host's (DTensor's
# dispatch; the schedule's), 50-500 ms, and that host switches between speed levels 10-20 % apart within
# seconds, so configurations timed one after the other in windows of 3-4 steps compare moments of the host,
# not micro-batches: run 18's Salamandra-2B TP read 439.3 ms at micro-batch 1 (3 steps: 439, 451, 358;
# the model's first configuration after its build) and 321.5 at 8 (4 steps), a GPU-bound ordering that
# cannot be. Every calibration TP row before it had 3-6 steps (bench/validate/README.md, "h26t, session 26").
DEFAULT_ROUNDS = 3


def agreed_any(flag, device, world):
    """True on every rank when any rank says so (a collective step must run on all of them)."""
    if world <= 1:
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item() > 0


def measure_rounds(name, mbs, step, device, warmup, steps, min_seconds, world, rounds, late, round_done=None):
    """The micro-batches `mbs` of one built model, measured in turns (--rounds).

    First each micro-batch's warm-up steps, in the order given, until one does not fit (out of memory
    ends the sweep, as in measure()'s order); each warm-up step's time is kept (warmup_times_s: the
    first steps after a build fill DTensor's sharding caches, the allocator's pool and the schedules).
    Then `rounds` rounds in which each micro-batch takes a turn of n steps, n = max(steps, the steps
    that fill min_seconds / rounds at its warm-up speed), so each configuration's median spans the same
    seconds of the host as its neighbours'. The peak is that of its warm-up steps after the first
    (the first also makes the optimizer's state, a PP schedule's buffers): there the smaller
    micro-batches are resident as they were when runs 1-18 timed one after the other, and the larger
    ones not yet. In the turns a PP schedule built for a larger micro-batch keeps its last outputs
    (the last stage's logits of 4 chunks) beside the smaller one's step, which no training at one
    micro-batch holds: llama2.c-15M's PP micro-batch 1 read 2.96 GiB in its turns against 0.94 in
    run 18 (2x H200, tp_protocol_check.py); TP's peaks are the same either way (within 4 MB). The
    turns' largest stays as peak_turns_bytes. late() -> True stops after a complete round (the ranks
    agree); round_done(records so far) after each round, on every rank. Returns {mb: record}; a record
    that did not fit has "oom" and "error"."""
    out, live, per_turn = {}, [], {}
    for mb in mbs:
        if agreed_any(late(), device, world):
            break
        warm = []
        try:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            for i in range(max(1, warmup)):
                t0 = time.perf_counter()
                step(mb)
                torch.cuda.synchronize(device)
                warm.append(time.perf_counter() - t0)
                if i == 0 and warmup > 1:  # the first step's one-time allocations are not the step's
                    torch.cuda.reset_peak_memory_stats(device)
            peak = int(torch.cuda.max_memory_allocated(device))
            ok = torch.tensor([1.0], device=device)
        except torch.OutOfMemoryError as e:
            out[mb] = {"oom": True, "error": str(e).splitlines()[0][:200]}
            ok = torch.tensor([0.0], device=device)
        if world > 1:
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
        if ok.item() == 0:
            out.setdefault(mb, {"oom": True, "error": "out of memory on another rank"})
            gc.collect()  # the failed step's tensors go before the others' turns
            torch.cuda.empty_cache()
            break
        n = steps
        if min_seconds > 0:
            n = max(n, int(min_seconds / rounds / max(1e-6, statistics.median(warm[-2:]))) + 1)
        n = min(n, max(1, MAX_WINDOW_STEPS // rounds))
        if world > 1:  # every rank takes the most steps any rank asks for
            t = torch.tensor([float(n)], device=device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            n = int(t.item())
        per_turn[mb] = n
        out[mb] = {"warmup_times_s": warm, "step_times_s": [], "peak_allocated_bytes": peak,
                   "peak_turns_bytes": 0, "steady_allocated_bytes": int(torch.cuda.memory_allocated(device))}
        live.append(mb)
    done = 0
    for _ in range(rounds):
        if done > 0 and agreed_any(late(), device, world):
            break
        for mb in live:
            r = out[mb]
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            for _ in range(per_turn[mb]):
                t0 = time.perf_counter()
                step(mb)
                torch.cuda.synchronize(device)
                r["step_times_s"].append(time.perf_counter() - t0)
            r["peak_turns_bytes"] = max(r["peak_turns_bytes"], int(torch.cuda.max_memory_allocated(device)))
        done += 1
        for mb in live:
            out[mb]["step_time_median_s"] = statistics.median(out[mb]["step_times_s"])
            out[mb]["rounds"] = done
        if round_done is not None:
            round_done(out)
    return out


def run_model(name, args, rank, world, device, recs, save):
    """Measures one model's micro-batches into recs; save() after each, so that a
    process cut off by its time box keeps every configuration it finished."""
    torch.manual_seed(0)
    pp_chunks = 4
    if args.mode == "pp":
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B
        with LANE.held("host"):
            full = build(name, "cpu")
            part = PipelinePart(full, rank == 0).to(device)
            del full
        model = part
        loss_fn = lambda logits, y: torch.nn.functional.cross_entropy(
            logits.float().flatten(0, 1), y.flatten())
        scheds = {}  # a stage learns its micro-batch's shapes on first use: one per size
        opt = optimizer_for(name, part.parameters())

        def step(mb):
            if mb not in scheds:
                stage = PipelineStage(part, rank, world, device)
                scheds[mb] = Schedule1F1B(stage, n_microbatches=pp_chunks, loss_fn=loss_fn)
            sched = scheds[mb]
            x, y = batch_for(name, mb * pp_chunks, device)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                if rank == 0:
                    sched.step(x)
                else:
                    sched.step(target=y)
            opt.step()
            opt.zero_grad(set_to_none=True)
    else:
        with LANE.held("host"):  # the build: parameters made on the CPU, copied to the GPU
            model = wrap(name, build(name, device), args.mode, rank, world)
            model.train()
            opt = Optimizers(name, model.parameters())

        def step(mb):
            x, y = batch_for(name, mb, device)
            loss_of(name, model, x, y).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    t_model = time.time()
    waited_before = LANE.waited_s  # a model's time budget is its own time: the lane lock's waits are not in it
    rounds = getattr(args, "rounds", DEFAULT_ROUNDS)
    if args.mode in ("tp", "pp") and rounds > 0:
        def late():
            return time.time() - t_model > args.model_seconds or out_of_time(args)

        first = len(recs)

        def emit(got, final=False):
            """This model's records so far, in place of the last round's (saved after every round, so that
            a process cut off by its time box keeps the rounds it finished)."""
            del recs[first:]
            for mb in args.micro_batches:
                rec = {"model": name, "mode": args.mode, "world_size": world, "micro_batch": mb,
                       "grad_accum": pp_chunks if args.mode == "pp" else 1,
                       "tp": world if args.mode == "tp" else 1, "pp": world if args.mode == "pp" else 1}
                r = dict(got.get(mb) or {})
                if not r:
                    if any("error" in x for x in got.values()):
                        break  # larger micro-batches do not fit either
                    rec["skipped"] = "time budget"
                    recs.append(rec)
                    continue
                if "error" not in r and "step_time_median_s" not in r:
                    continue  # warmed up, no round yet
                if world > 1 and "peak_allocated_bytes" in r:
                    peak = torch.tensor([float(r["peak_allocated_bytes"])], device=device)
                    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
                    r["peak_allocated_bytes"] = int(peak.item())
                r["step_times_s"] = list(r.get("step_times_s", []))
                rec.update(r)
                recs.append(rec)
                if final and rank == 0:
                    what = (f"step={r['step_time_median_s'] * 1e3:.1f} ms peak="
                            f"{r['peak_allocated_bytes'] / 2**30:.2f} GiB ({len(r['step_times_s'])} steps in "
                            f"{r['rounds']} rounds)") if "error" not in r else r["error"][:80]
                    print(f"[{args.mode}] {name} mb={mb}: {what}", flush=True)
            save()

        got = measure_rounds(name, args.micro_batches, step, device, args.warmup, args.steps,
                             args.min_seconds, world, rounds, late, emit)
        emit(got, final=True)
        with LANE.held("host"):
            del model, opt
            gc.collect()
            torch.cuda.empty_cache()
        return
    for mb in args.micro_batches:
        rec = {"model": name, "mode": args.mode, "world_size": world, "micro_batch": mb,
               "grad_accum": pp_chunks if args.mode == "pp" else 1,
               "tp": world if args.mode == "tp" else 1, "pp": world if args.mode == "pp" else 1}
        if time.time() - t_model - (LANE.waited_s - waited_before) > args.model_seconds or out_of_time(args):
            rec["skipped"] = "time budget"
            recs.append(rec)
            continue
        try:
            with LANE.held("steps") as waited:  # the steps: never beside the other lane's build
                if LANE.gate:
                    rec["lock_wait_s"] = round(waited, 3)
                r = measure(name, model, opt, step, mb, device, args.warmup, args.steps,
                            args.min_seconds, world)
            ok = torch.tensor([1.0], device=device)
        except torch.OutOfMemoryError as e:
            r = {"oom": True, "error": str(e).splitlines()[0][:200]}
            ok = torch.tensor([0.0], device=device)
        if world > 1:
            peak = torch.tensor([float(r.get("peak_allocated_bytes", 0))], device=device)
            dist.all_reduce(peak, op=dist.ReduceOp.MAX)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
            if "peak_allocated_bytes" in r:
                r["peak_allocated_bytes"] = int(peak.item())
            if ok.item() == 0 and "error" not in r:
                r = {"oom": True, "error": "out of memory on another rank"}
        rec.update(r)
        recs.append(rec)
        save()
        if rank == 0:
            what = (f"step={r['step_time_median_s'] * 1e3:.1f} ms peak="
                    f"{r['peak_allocated_bytes'] / 2**30:.2f} GiB") if "error" not in r else r["error"][:80]
            print(f"[{args.mode}] {name} mb={mb}: {what}", flush=True)
        if "error" in r:
            break  # larger micro-batches do not fit either
    with LANE.held("host"):
        del model, opt
        gc.collect()
        torch.cuda.empty_cache()


def out_of_time(args):
    """--deadline-s: no configuration starts within --reserve-s of it (the ranks agree,
    since each compares the same start time and clock)."""
    return args.deadline_s > 0 and time.time() - T_START > args.deadline_s - args.reserve_s


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["single", "ddp", "fsdp", "tp", "pp"], default="single")
    p.add_argument("--models", required=True)
    p.add_argument("--micro-batches", default="1,2,4,8,16")
    p.add_argument("--vision-micro-batches", default="1,8,32,128,256")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--model-seconds", type=float, default=90)
    p.add_argument("--min-seconds", type=float, default=0.0,
                   help="time steps until this many seconds have passed (at least --steps)")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                   help="tp and pp: a model's micro-batches take turns over this many rounds, each turn "
                        "--steps steps or more (--min-seconds over the rounds); 0: one after the other, "
                        "as runs 1-18 measured them")
    p.add_argument("--deadline-s", type=float, default=0,
                   help="seconds this process may run (its time box); 0: no limit")
    p.add_argument("--reserve-s", type=float, default=15,
                   help="no model or configuration starts with less than this left before --deadline-s")
    p.add_argument("--lane-lock", default=None,
                   help="single-GPU lanes side by side: a file both lanes lock (LaneLock), so that no "
                        "step is timed while the other lane builds a model")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if args.lane_lock and args.mode != "single":
        p.error("--lane-lock is for the single-GPU lanes only")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
    device = torch.device("cuda", torch.cuda.current_device())
    import transformers
    import torchvision
    meta = {"schema": "xdeep.memory_validation/1", "suite": "library_suite.py",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": socket.gethostname(), "gpu": torch.cuda.get_device_name(device),
            "gpu_memory_bytes": torch.cuda.get_device_properties(device).total_memory,
            "gpu_count_used": world, "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": ".".join(map(str, torch.cuda.nccl.version())), "mode": args.mode,
            "transformers": transformers.__version__, "torchvision": torchvision.__version__,
            "command": " ".join(sys.argv)}
    LANE.leave()  # the lane's start (imports, CUDA's context) is over
    runs = []
    lm_mbs = [int(x) for x in args.micro_batches.split(",")]
    vision_mbs = [int(x) for x in args.vision_micro_batches.split(",")]

    def save():  # whole file each time, written aside and renamed: never half-written
        if LANE.gate:
            meta["lane_wait_s"] = round(LANE.waited_s, 2)
        if rank == 0:
            with open(args.out + ".part", "w") as f:
                json.dump({"meta": meta, "runs": runs}, f, indent=1)
            os.replace(args.out + ".part", args.out)

    for name in args.models.split(","):
        args.micro_batches = vision_mbs if name in VISION else lm_mbs
        if out_of_time(args):
            runs.append({"model": name, "mode": args.mode, "world_size": world, "skipped": "deadline"})
            print(f"[{args.mode}] {name}: skipped (deadline)", flush=True)
        else:
            try:
                run_model(name, args, rank, world, device, runs, save)
            except Exception as e:  # one model's failure leaves the others measured
                runs.append({"model": name, "mode": args.mode, "world_size": world,
                             "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"})
                print(f"[{args.mode}] {name}: {runs[-1]['error']}", flush=True)
                gc.collect()
                torch.cuda.empty_cache()
        args.micro_batches = lm_mbs
        save()
    if LANE.gate:
        print(f"[{args.mode}] {args.models}: waited {LANE.waited_s:.1f} s in all for the other lane's "
              "host work (--lane-lock)", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
