#!/usr/bin/env python3
"""The nanort Python package on a GPU with PyTorch CUDA tensors as inputs and
outputs (__cuda_array_interface__, nanort_run_with_memory), on a bundle made
by gpu_bundle.py --python-package: every model whose tensors may all be on the
device runs once on torch.cuda tensors, and its outputs are compared with
ONNX Runtime's as device_check.py compares them.

    python3 gpu_bundle/torch_cuda_arrays.py

Exit status: 0 when every model that ran matched; 2 when this Python cannot
import the bundled package (it is built for one CPython version) or has no
PyTorch with CUDA.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "python"))


def main() -> int:
    try:
        import torch
        import nanort
    except ImportError as e:
        print(f"skipped: {e} (python {sys.version.split()[0]})")
        return 2
    if not torch.cuda.is_available():
        print("skipped: no CUDA in PyTorch")
        return 2
    from device_check import compare, TOLERANCE
    with open(os.path.join(HERE, "manifest.json")) as f:
        manifest = json.load(f)
    failed = ran = 0
    for mod in manifest["models"]:
        if not mod["compiled"]:
            continue
        name, d = mod["name"], os.path.join(HERE, mod["name"])
        m = nanort.load(os.path.join(d, name + ".so"), name=name)
        if not all(t.cuda for t in m.inputs + m.outputs):
            continue
        feeds = {k: torch.from_numpy(np.load(os.path.join(d, f))).cuda() for k, f in mod["inputs"]}
        outs = {o.name: torch.empty(o.shape, dtype=getattr(torch, str(o.dtype)), device="cuda")
                for o in m.outputs}
        torch.cuda.synchronize()  # nanort reads on its own stream
        got = m.run(feeds, outputs=outs)
        problems = []
        for oname, ref, _ in mod["outputs"]:
            if got[oname] is not outs[oname]:
                problems.append(f"{oname}: not the caller's tensor")
                continue
            problem, _ = compare(outs[oname].cpu().numpy(), np.load(os.path.join(d, ref)),
                                 mod.get("tolerance", TOLERANCE))
            if problem:
                problems.append(f"{oname}: {problem}")
        ran += 1
        failed += bool(problems)
        print(f"{name}: {'FAIL ' + '; '.join(problems) if problems else 'PASS'} (torch.cuda "
              f"tensors in and out, {m.gpu})")
    print(f"{ran} models on torch.cuda tensors, {failed} failed")
    return 1 if failed or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
