#!/usr/bin/env python3
"""pytorch_mlp_step.py — the PyTorch anchor of jobs/gpu_bench.sh: microddp's model, step by step in
PyTorch on the same GPU, timed the same way (CUDA events around each step, median).

Model: depth x (Linear(width, width) + ReLU), then Linear(width, classes); cross-entropy; Adam
(PyTorch's defaults, as microddp's) or SGD with momentum 0.9. The batch is on the GPU before timing
(microddp's synthetic batch is made on the GPU too). Prints ONE JSON line:
  {"available": true, "torch": "2.x", "device": "...", "rows": {"eager_fp32": ms, "eager_tf32": ms,
   "graph_fp32": ms, "autocast_bf16": ms, "fwd_bwd_fp32": ms}}
or {"available": false, "why": "..."} when torch or a GPU is missing (exit 0 either way: the
benchmark's table then says "not available"). Used only by jobs/gpu_bench.sh; never by the product.
"""
import argparse
import json
import statistics
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--depth", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--classes", type=int, default=2)
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    a = p.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(json.dumps({"available": False, "why": f"python3 cannot import torch ({e})"}))
        return
    if not torch.cuda.is_available():
        print(json.dumps({"available": False, "why": "torch sees no CUDA device"}))
        return
    dev = torch.device("cuda")
    x = torch.randn(a.batch, a.width, device=dev)
    y = torch.randint(0, a.classes, (a.batch,), device=dev)

    def make(capturable=False):
        torch.manual_seed(1)
        layers = []
        for _ in range(a.depth):
            layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
        layers.append(torch.nn.Linear(a.width, a.classes))
        model = torch.nn.Sequential(*layers).to(dev)
        if a.optimizer == "adam":
            opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=capturable)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        return model, opt

    def timed(fn, steps=a.steps, warmup=a.warmup):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(steps):
            b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            b.record()
            fn()
            e.record()
            e.synchronize()
            times.append(b.elapsed_time(e))
        return statistics.median(times)

    def eager_step(model, opt, autocast=False):
        def step():
            opt.zero_grad(set_to_none=False)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return step

    rows = {}
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, opt = make()
    rows["eager_fp32"] = timed(eager_step(model, opt))

    def fwd_bwd():
        model.zero_grad(set_to_none=False)
        F.cross_entropy(model(x), y).backward()
    rows["fwd_bwd_fp32"] = timed(fwd_bwd)
    torch.backends.cuda.matmul.allow_tf32 = True
    model, opt = make()
    rows["eager_tf32"] = timed(eager_step(model, opt))
    torch.backends.cuda.matmul.allow_tf32 = False
    model, opt = make()
    rows["autocast_bf16"] = timed(eager_step(model, opt, autocast=True))
    # The whole step (forward, backward, optimizer) as one CUDA graph, as PyTorch documents it:
    # warm up on a side stream, capture once, replay.
    model, opt = make(capturable=True)
    step = eager_step(model, opt)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    rows["graph_fp32"] = timed(graph.replay)
    print(json.dumps({"available": True, "torch": torch.__version__, "device": torch.cuda.get_device_name(0),
                      "rows": rows}))


if __name__ == "__main__":
    sys.exit(main())
