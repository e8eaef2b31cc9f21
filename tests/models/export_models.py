#!/usr/bin/python3
"""Exports real model architectures to ONNX, with random weights and no downloads.

Runs with Debian's own python3 and its python3-torch / python3-torchvision
(torch 1.13): the PyPI torch wheel pulls in gigabytes of CUDA libraries.
Weights are drawn from a fixed seed, so the same command writes the same
files; they are build products, never committed.

    /usr/bin/python3 tests/models/export_models.py --out DIR [NAME ...]
    /usr/bin/python3 tests/models/export_models.py --list

Each model is exported at batch 1 (mlp_b32: batch 32) with static shapes (opset 14), as a user
would before compiling it with nanoc.
"""

import argparse
import math
import os
import sys

MODELS = {}


def model(name, ci=True):
    """Registers an exporter; `ci` marks the models CTest builds and checks."""
    def wrap(fn):
        MODELS[name] = (fn, ci)
        return fn
    return wrap


def torchvision_model(name, **kwargs):
    import torchvision.models as tvm
    return getattr(tvm, name)(weights=None, **kwargs), [("input", (1, 3, 224, 224))]


@model("resnet18")
def resnet18():
    return torchvision_model("resnet18")


@model("resnet50")
def resnet50():
    return torchvision_model("resnet50")


@model("mobilenet_v2")
def mobilenet_v2():
    return torchvision_model("mobilenet_v2")


@model("mobilenet_v3_small")
def mobilenet_v3_small():
    return torchvision_model("mobilenet_v3_small")


@model("efficientnet_b0")
def efficientnet_b0():
    return torchvision_model("efficientnet_b0")


@model("squeezenet1_1")
def squeezenet1_1():
    return torchvision_model("squeezenet1_1")


@model("shufflenet_v2")
def shufflenet_v2():
    return torchvision_model("shufflenet_v2_x1_0")


def mlp(batch):
    """A 784-512-512-10 ReLU MLP (MNIST-sized): Gemm-bound at batch 32."""
    from torch import nn
    net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10))
    return net, [("input", (batch, 784))]


@model("mlp_b1")
def mlp_b1():
    return mlp(1)


@model("mlp_b32")
def mlp_b32():
    return mlp(32)


@model("vit_small")
def vit_small():
    # torchvision's ViT with a small configuration: 64x64 images in 8x8
    # patches, 4 pre-norm encoder blocks of width 192 and 3 heads.
    from torch import nn
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=64, patch_size=8, num_layers=4, num_heads=3,
                          hidden_dim=192, mlp_dim=768, num_classes=100)
    # torchvision zero-initializes the classifier head: the model's output
    # would be exactly 0 for every input, and every check of it vacuous.
    nn.init.normal_(m.heads.head.weight, std=0.05)
    nn.init.normal_(m.heads.head.bias, std=0.01)
    return m, [("input", (1, 3, 64, 64))]


class Encoder:
    """A BERT-style post-norm encoder (the paper's block): multi-head
    self-attention with a padding mask, GELU feed-forward, LayerNorm after each
    residual, token + position + segment embeddings."""

    @staticmethod
    def build(vocab, hidden, layers, heads, ff, seq):
        import torch
        from torch import nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(hidden, 3 * hidden)
                self.out = nn.Linear(hidden, hidden)
                self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
                self.ff1 = nn.Linear(hidden, ff)
                self.ff2 = nn.Linear(ff, hidden)
                self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

            def forward(self, x, bias):
                b, s, _ = x.shape
                d = hidden // heads
                q, k, v = self.qkv(x).split(hidden, dim=-1)
                q = q.reshape(b, s, heads, d).transpose(1, 2)
                k = k.reshape(b, s, heads, d).transpose(1, 2)
                v = v.reshape(b, s, heads, d).transpose(1, 2)
                att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + bias
                ctx = torch.matmul(att.softmax(-1), v).transpose(1, 2).reshape(b, s, hidden)
                x = self.ln1(x + self.out(ctx))
                return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(vocab, hidden)
                self.pos = nn.Embedding(seq, hidden)
                self.seg = nn.Embedding(2, hidden)
                self.ln = nn.LayerNorm(hidden, eps=1e-12)
                self.blocks = nn.ModuleList([Block() for _ in range(layers)])

            def forward(self, input_ids, attention_mask):
                pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
                x = self.ln(self.tok(input_ids) + self.pos(pos) +
                            self.seg(torch.zeros_like(input_ids)))
                bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
                for blk in self.blocks:
                    x = blk(x, bias)
                return x

        return Model(), [("input_ids", (1, seq), "int64", vocab),
                         ("attention_mask", (1, seq), "int64", 2)]


@model("bert_tiny")
def bert_tiny():
    return Encoder.build(vocab=1000, hidden=128, layers=2, heads=2, ff=512, seq=128)


@model("bert_base", ci=False)
def bert_base():
    return Encoder.build(vocab=30522, hidden=768, layers=12, heads=12, ff=3072, seq=128)


@model("gpt2_block")
def gpt2_block():
    """One GPT-2-small decoder block (pre-norm, causal mask, GELU tanh MLP)."""
    import torch
    from torch import nn
    hidden, heads, seq = 768, 12, 128

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(hidden)
            self.attn = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)
            self.fc = nn.Linear(hidden, 4 * hidden)
            self.fc_out = nn.Linear(4 * hidden, hidden)
            mask = torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq)
            self.register_buffer("mask", mask)

        def forward(self, x):
            b, s, _ = x.shape
            d = hidden // heads
            q, k, v = self.attn(self.ln1(x)).split(hidden, dim=2)
            q = q.view(b, s, heads, d).transpose(1, 2)
            k = k.view(b, s, heads, d).transpose(1, 2)
            v = v.view(b, s, heads, d).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            att = att.masked_fill(self.mask[:, :, :s, :s] == 0, float("-inf"))
            y = (att.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(b, s, hidden)
            x = x + self.proj(y)
            h = nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh")
            return x + self.fc_out(h)

    return Block(), [("x", (1, seq, hidden))]


@model("unet_small")
def unet_small():
    """A small UNet-style segmentation net: two down steps (Conv, MaxPool), one
    up step by ConvTranspose and one by Resize, skip connections by Concat."""
    import torch
    from torch import nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout),
                             nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1, self.e2, self.mid = block(3, 16), block(16, 32), block(32, 64)
            self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
            self.d2 = block(64, 32)
            self.d1 = block(48, 16)
            self.head = nn.Conv2d(16, 4, 1)

        def forward(self, x):
            e1 = self.e1(x)
            e2 = self.e2(nn.functional.max_pool2d(e1, 2))
            m = self.mid(nn.functional.max_pool2d(e2, 2))
            d2 = self.d2(torch.cat([self.up2(m), e2], 1))
            up1 = nn.functional.interpolate(d2, scale_factor=2.0, mode="bilinear",
                                            align_corners=False)
            d1 = self.d1(torch.cat([up1, e1], 1))
            return self.head(d1)

    return UNet(), [("image", (1, 3, 64, 64))]


def export(name, out_dir):
    import torch
    torch.manual_seed(sum(map(ord, name)))
    fn, _ = MODELS[name]
    net, inputs = fn()
    net.eval()
    # Random but realistic BatchNorm statistics, so folding them is exercised.
    for mod in net.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
    args, names = [], []
    for spec in inputs:
        if len(spec) == 2:
            args.append(torch.randn(*spec[1]))
        else:
            args.append(torch.randint(0, spec[3], spec[1], dtype=torch.int64))
        names.append(spec[0])
    path = os.path.join(out_dir, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(net, tuple(args), path, input_names=names, output_names=["output"],
                          opset_version=14, do_constant_folding=True)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="directory for NAME.onnx")
    ap.add_argument("--list", action="store_true", help="print NAME ci|all per model")
    ap.add_argument("names", nargs="*", help="models to export (default: the CI set)")
    args = ap.parse_args()
    if args.list:
        for name, (_, ci) in MODELS.items():
            print(name, "ci" if ci else "all")
        return 0
    if not args.out:
        ap.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    names = args.names or [n for n, (_, ci) in MODELS.items() if ci]
    for name in names:
        if name not in MODELS:
            print(f"unknown model {name}; known: {', '.join(MODELS)}", file=sys.stderr)
            return 2
        print(export(name, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
