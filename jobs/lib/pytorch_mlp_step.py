#!/usr/bin/env python3
"""pytorch_mlp_step.py — the PyTorch anchor of jobs/gpu_bench.sh: microddp's model, step by step in
PyTorch on the same GPU, doing the same work per step as `microddp train`, timed the same way.

Model: depth x (Linear(width, width) + ReLU), then Linear(width, classes); cross-entropy (mean over
the batch); the optimizer and its settings as given (--optimizer adam: Adam(lr, betas 0.9/0.999,
eps 1e-8), microddp's Adam; --optimizer sgd: SGD(lr, momentum)), PyTorch's fused implementation
where this torch has one. Precisions: fp32 (TF32 off), tf32 (torch.backends.cuda.matmul.allow_tf32),
bf16 (torch.autocast to bfloat16: note that autocast keeps the activations in bf16, where microddp
keeps its GEMM outputs in fp32 and rounds only the GEMM operands).

Two rows per precision and mode (eager, or the step replayed as one CUDA graph):
  "<mode>_<prec>"       microddp's step: the batch made on the GPU (features and labels: two kernels,
                        outside the graph, as microddp's generator runs before its replay), forward,
                        backward, the gradient's global norm, the optimizer, and the loss read by the
                        host (loss.item(): one host synchronisation per step, as microddp's verdict)
  "core_<mode>_<prec>"  forward, backward and optimizer only, on a batch made once; a
                        torch.cuda.synchronize() per step so the step can be timed
Each is the median over --steps steps (after --warmup) of the host's wall time per step, the same
clock as microddp's step_ms. What microddp still does on top, at np 1: a one-rank NCCL all-reduce of
the gradients and of its 3-value verdict, and the update gate (skip a non-finite step, clip factor);
jobs/gpu_bench.sh prints that beside the ratios.
Prints ONE JSON line:
  {"available": true, "torch": "2.x", "device": "...", "optimizer": "...", "rows": {"eager_fp32": ms, ...}}
or {"available": false, "why": "..."} when torch or a GPU is missing (exit 0 either way: the benchmark's
table then says "n/a"). Used only by jobs/gpu_bench.sh; never by the product.
"""
import argparse
import json
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--depth", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--classes", type=int, default=2)
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--momentum", type=float, default=0.0)
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
    # Static batch tensors: refilled in place each step (their addresses are what a graph captures).
    x = torch.empty(a.batch, a.width, device=dev)
    y = torch.empty(a.batch, dtype=torch.long, device=dev)

    def new_batch():
        x.normal_()
        y.random_(0, a.classes)

    new_batch()
    optimizer_used = []

    def make(capturable):
        torch.manual_seed(1)
        layers = []
        for _ in range(a.depth):
            layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
        layers.append(torch.nn.Linear(a.width, a.classes))
        model = torch.nn.Sequential(*layers).to(dev)
        params = list(model.parameters())
        # PyTorch's fastest form of the same update (fused: one kernel over all parameters, as
        # microddp's one pass over its flat buffer); the multi-tensor form where fused is missing.
        for fused in (True, False):
            try:
                if a.optimizer == "adam":
                    opt = torch.optim.Adam(params, lr=a.lr, betas=(0.9, 0.999), eps=1e-8, capturable=capturable,
                                           **({"fused": True} if fused else {}))
                else:
                    opt = torch.optim.SGD(params, lr=a.lr, momentum=a.momentum, **({"fused": True} if fused else {}))
                optimizer_used.append(f"{type(opt).__name__}({'fused' if fused else 'foreach'})")
                return model, opt
            except (TypeError, RuntimeError):
                continue
        raise RuntimeError("no optimizer")

    def grad_norm(model):
        grads = [q.grad for q in model.parameters() if q.grad is not None]
        norms = torch._foreach_norm(grads) if hasattr(torch, "_foreach_norm") else [g.norm() for g in grads]
        return torch.linalg.vector_norm(torch.stack(norms))

    def compute(model, opt, prec, with_norm):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=prec == "bf16", cache_enabled=False):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        norm = grad_norm(model) if with_norm else None
        opt.step()
        return loss, norm

    def median_ms(step):
        for _ in range(a.warmup):
            step()
        torch.cuda.synchronize()
        times = []
        for _ in range(a.steps):
            t0 = time.perf_counter()
            step()  # ends with a host synchronisation
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    def eager(prec, like_ours):
        model, opt = make(capturable=False)

        def step():
            if like_ours:
                new_batch()
            opt.zero_grad(set_to_none=False)
            loss, _ = compute(model, opt, prec, with_norm=like_ours)
            if like_ours:
                loss.item()
            else:
                torch.cuda.synchronize()

        return median_ms(step)

    def graphed(prec, like_ours):
        # PyTorch's whole-network capture: warm up on a side stream, capture once, replay.
        model, opt = make(capturable=True)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                compute(model, opt, prec, with_norm=like_ours)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss, _ = compute(model, opt, prec, with_norm=like_ours)

        def step():
            if like_ours:
                new_batch()  # outside the graph, as microddp's batch
            graph.replay()
            if like_ours:
                static_loss.item()
            else:
                torch.cuda.synchronize()

        return median_ms(step)

    rows = {}
    for prec in ("fp32", "tf32", "bf16"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        torch.backends.cudnn.allow_tf32 = prec == "tf32"
        for mode, run in (("eager", eager), ("graph", graphed)):
            rows[f"{mode}_{prec}"] = run(prec, like_ours=True)
            rows[f"core_{mode}_{prec}"] = run(prec, like_ours=False)
    torch.backends.cuda.matmul.allow_tf32 = False
    print(json.dumps({"available": True, "torch": torch.__version__, "device": torch.cuda.get_device_name(0),
                      "optimizer": optimizer_used[0] if optimizer_used else "?", "rows": rows}))


if __name__ == "__main__":
    sys.exit(main())
