#!/usr/bin/env python3
"""check_layers.py — the include rules of docs/design.md ("Where things live"), checked on the tree.

1. The layers of src/ (and kernels/): a file includes its own folder and the layers below it, never
   one above. Order, lowest first: core, kernels, comm, data, model, ddp, {io, perf} (siblings:
   neither includes the other), {labs, run} (siblings), app.
2. The rooms of src/comm/: a file includes its own room and the rooms listed before it (transport,
   runtime, algorithms, gpu, backends); the vocabulary headers at comm/ top level include only
   core/ and each other; the composition at comm/ top level (communicator, factory, references)
   may include every room.
3. Only the app, the run library (src/run/) and the trainer's own parts include ddp/trainer.hpp.
4. No production enum, table or hook names a lab: nothing outside src/labs/ and src/app/ includes
   labs/ or spells a lab strategy or backend name ("lab-..." strings, Strategy::Lab...).
Exit 0 when the tree follows them; otherwise every violation, one per line, and exit 1.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
LAYER_RANK = {"core": 0, "kernels": 1, "comm": 2, "data": 3, "model": 4, "ddp": 5, "io": 6, "perf": 6,
              "labs": 7, "run": 7, "app": 8}
COMM_ROOMS = ["transport", "runtime", "algorithms", "gpu", "backends"]
COMM_VOCABULARY = {"types.hpp", "work.hpp", "backend.hpp", "backend_description.hpp", "comm_config.hpp",
                   "collective_costs.hpp"}
# The trainer's own parts: the files of ddp/ that make up the training step (ddp/trainer*.{hpp,cpp}).
TRAINER_PARTS = re.compile(r"^src/ddp/trainer[^/]*\.(hpp|cpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LAB_NAME = re.compile(r'"lab(-[a-z0-9-]+)?"|Strategy::Lab\w*|\blab_sync_maker\b|\blab_backend_maker\b')

def layer_of(rel):
    parts = rel.split("/")
    if parts[0] == "kernels":
        return "kernels"
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    return None

def comm_room(rel):
    """The room of a file under src/comm: a room name, 'vocabulary' or 'composition'."""
    parts = rel.split("/")
    if len(parts) > 3:
        return parts[2]
    return "vocabulary" if parts[2] in COMM_VOCABULARY else "composition"

def comm_room_of_include(inc):
    parts = inc.split("/")  # comm/<room>/<file> or comm/<file>
    if len(parts) > 2:
        return parts[1]
    return "vocabulary" if parts[1] in COMM_VOCABULARY else "composition"

def comm_allowed(src_room, inc_room):
    if src_room == "composition":
        return True
    if inc_room == "vocabulary":
        return True
    if src_room == "vocabulary":
        return False  # the vocabulary includes only core/ and itself
    if inc_room == "composition":
        return False
    return COMM_ROOMS.index(inc_room) <= COMM_ROOMS.index(src_room)

def main():
    errors = []
    files = sorted(p for d in ("src", "kernels") for p in (ROOT / d).rglob("*")
                   if p.suffix in (".hpp", ".cpp", ".cu", ".cuh", ".h"))
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        layer = layer_of(rel)
        if layer is None:
            continue
        text = path.read_text(errors="replace")
        for inc in INCLUDE.findall(text):
            top = inc.split("/")[0]
            if top not in LAYER_RANK:
                continue  # a third-party header ("CLI/CLI.hpp") or a path inside kernels/
            if top != layer and LAYER_RANK[top] >= LAYER_RANK[layer]:
                errors.append(f"{rel}: includes {inc}: layer {layer} may not include {top} (docs/design.md)")
            if layer == "comm" and top == "comm":
                src_room, inc_room = comm_room(rel), comm_room_of_include(inc)
                if not comm_allowed(src_room, inc_room):
                    errors.append(f"{rel}: includes {inc}: comm room {src_room} may not include room {inc_room}")
            if inc == "ddp/trainer.hpp" and layer not in ("app", "run") and not TRAINER_PARTS.match(rel):
                errors.append(f"{rel}: includes ddp/trainer.hpp (only the app, the run library and the trainer's parts may)")
        if layer not in ("labs", "app"):
            for m in LAB_NAME.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                errors.append(f"{rel}:{line}: names a lab ({m.group(0)}): labs register themselves (src/labs)")
    for e in errors:
        print(e)
    print(f"check_layers: {len(files)} files, {len(errors)} violation(s)")
    return 1 if errors else 0

if __name__ == "__main__":
    sys.exit(main())
