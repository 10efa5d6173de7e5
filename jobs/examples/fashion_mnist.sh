#!/bin/bash
# jobs/examples/fashion_mnist.sh — a real data set end to end: Fashion-MNIST (Zalando's 28x28
# grey-scale clothing images, 10 classes, 60000 training and 10000 test images, the IDX format of
# MNIST) imported, trained on NP ranks, and the test set evaluated.
#
#   1. installs Debian's dataset-fashion-mnist when its files are missing (apt-get; sudo when not
#      root) — it puts the four .gz IDX files in /usr/share/datasets/fashion-mnist;
#   2. imports the training and the test set (`make-dataset --from-idx`: pixels / 255, float32);
#   3. trains the MLP (784 -> WIDTH x DEPTH -> 10, Adam) with `train --data` for EPOCHS shuffled
#      epochs (a new seeded order of the training rows each epoch, the partial last batch dropped,
#      docs/data_sets.md) on the training file less VAL_FRACTION of its rows, held out as the
#      validation set and evaluated at each epoch's end, with the learning rate warmed up over
#      WARMUP_STEPS and then decayed by LR_SCHEDULE down to MIN_LR (docs/training_recipes.md);
#      the model of the best validation (SAVE_BEST) is kept as CKPT_DIR/best.h5; checkpoints go to
#      CKPT_DIR every CKPT_EVERY steps and at the end, and a rerun resumes there (--resume auto),
#      also in mid-epoch; the metrics are appended to train.jsonl (jobs/plot_metrics.py draws them);
#   4. evaluates the test set with `evaluate` (loss, accuracy, per class, confusion matrix) on the
#      best model (the last one without SAVE_BEST), and exports it for numpy (`export`,
#      docs/checkpoint_format.md);
#   5. prints the test accuracy and the wall times.
#
# Settings (environment, with defaults):
#   NP [2]  WIDTH [256]  DEPTH [2]  GLOBAL_BATCH [256]  EPOCHS [20]  VAL_FRACTION [0.1] (6000 of the
#   60000 training images held out: 54000 train rows, 210 steps per epoch at batch 256)
#   LR [0.003] (the peak of the schedule)  LR_SCHEDULE [cosine] (constant, cosine, linear)  WARMUP_STEPS [210] (one epoch)
#   MIN_LR [0]  SAVE_BEST [val_accuracy] (val_loss; "" keeps no best model)
#   SEED [1]  THREADS [1] BLAS threads per rank  CKPT_EVERY [1000] steps
#   DATA_DIR [/usr/share/datasets/fashion-mnist]  where the IDX .gz files are (the package's place)
#   CKPT_DIR [$RESULTS_DIR/ckpt_<width>x<depth>_b<batch>_lr<lr>_seed<seed>]  EXTRA_ARGS [] more train options
# and jobs/lib/common.sh's (MICRODDP_BIN, RESULTS_DIR, LAUNCHER, MPIRUN_FLAGS, ...).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/common.sh
source "$here/../lib/common.sh"
NP=${NP:-2} WIDTH=${WIDTH:-256} DEPTH=${DEPTH:-2} GLOBAL_BATCH=${GLOBAL_BATCH:-256} EPOCHS=${EPOCHS:-20}
VAL_FRACTION=${VAL_FRACTION:-0.1} CKPT_EVERY=${CKPT_EVERY:-1000}
LR=${LR:-0.003} SEED=${SEED:-1} THREADS=${THREADS:-1} EXTRA_ARGS=${EXTRA_ARGS:-}
LR_SCHEDULE=${LR_SCHEDULE:-cosine} WARMUP_STEPS=${WARMUP_STEPS:-210} MIN_LR=${MIN_LR:-0} SAVE_BEST=${SAVE_BEST-val_accuracy}
DATA_DIR=${DATA_DIR:-/usr/share/datasets/fashion-mnist}
RESULTS_DIR=${RESULTS_DIR:-${SLURM_SUBMIT_DIR:-$PWD}/results/fashion_mnist}
mddp_init
CKPT_DIR=${CKPT_DIR:-$RESULTS_DIR/ckpt_${WIDTH}x${DEPTH}_b${GLOBAL_BATCH}_lr${LR}_${LR_SCHEDULE}_w${WARMUP_STEPS}_seed${SEED}_val${VAL_FRACTION}}
mddp_provenance "$@"
echo "# model    : 784 -> $WIDTH x $DEPTH -> 10, Adam lr $LR ($LR_SCHEDULE after $WARMUP_STEPS warmup steps, min $MIN_LR), global batch $GLOBAL_BATCH, $EPOCHS epochs (validation: $VAL_FRACTION of the rows; best model: ${SAVE_BEST:-none}), np $NP, seed $SEED"

files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
missing=0
for f in "${files[@]}"; do [ -r "$DATA_DIR/$f" ] || missing=1; done
if [ $missing -eq 1 ]; then
  [ "$DATA_DIR" = /usr/share/datasets/fashion-mnist ] ||
    { echo "error: DATA_DIR=$DATA_DIR lacks ${files[*]}" >&2; exit 2; }
  echo "# data     : installing Debian's dataset-fashion-mnist"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends dataset-fashion-mnist >/dev/null
fi
echo "# data     : $DATA_DIR ($(dpkg-query -W -f='dataset-fashion-mnist ${Version}' dataset-fashion-mnist 2>/dev/null || echo 'not from the Debian package'))"

t0=$SECONDS
mddp_launch "$NP" "$MICRODDP_BIN" make-dataset --from-idx "$DATA_DIR/train-images-idx3-ubyte.gz" \
  "$DATA_DIR/train-labels-idx1-ubyte.gz" "$RESULTS_DIR/train.h5"
mddp_launch "$NP" "$MICRODDP_BIN" make-dataset --from-idx "$DATA_DIR/t10k-images-idx3-ubyte.gz" \
  "$DATA_DIR/t10k-labels-idx1-ubyte.gz" "$RESULTS_DIR/test.h5"
t_import=$((SECONDS - t0))

t0=$SECONDS
schedule=(--lr-schedule "$LR_SCHEDULE" --warmup-steps "$WARMUP_STEPS")
[ "$LR_SCHEDULE" = constant ] || schedule+=(--min-lr "$MIN_LR")
best=(); [ -z "$SAVE_BEST" ] || best=(--save-best "$SAVE_BEST")
# shellcheck disable=SC2086
mddp_launch "$NP" "$MICRODDP_BIN" train --data "$RESULTS_DIR/train.h5" --width "$WIDTH" --depth "$DEPTH" \
  --global-batch "$GLOBAL_BATCH" --epochs "$EPOCHS" --val-fraction "$VAL_FRACTION" --lr "$LR" --seed "$SEED" \
  "${schedule[@]}" "${best[@]}" --threads "$THREADS" --checkpoint-every "$CKPT_EVERY" --checkpoint-dir "$CKPT_DIR" \
  --resume auto --metrics "$RESULTS_DIR/train.jsonl" $EXTRA_ARGS
t_train=$((SECONDS - t0))
ckpt=$(find "$CKPT_DIR" -maxdepth 1 -name 'ckpt_*.h5' | sort | tail -1)
[ -n "$ckpt" ] || { echo "error: no checkpoint in $CKPT_DIR" >&2; exit 1; }
[ -z "$SAVE_BEST" ] || ckpt="$CKPT_DIR/best.h5"  # the model of the best validation

t0=$SECONDS
mddp_launch "$NP" "$MICRODDP_BIN" evaluate --checkpoint "$ckpt" --data "$RESULTS_DIR/test.h5" --threads "$THREADS"
mddp_launch "$NP" "$MICRODDP_BIN" evaluate --checkpoint "$ckpt" --data "$RESULTS_DIR/test.h5" --threads "$THREADS" \
  --json >"$RESULTS_DIR/test_eval.json"
t_eval=$((SECONDS - t0))
mddp_launch 1 "$MICRODDP_BIN" export "$ckpt" "$RESULTS_DIR/fashion_mnist_model.h5"

accuracy=$(grep '^  "accuracy"' "$RESULTS_DIR/test_eval.json" | tr -dc '0-9.')
echo "# ---- result ----"
steps=$("$MICRODDP_BIN" inspect "$ckpt" | sed -n 's/^#   steps_done \([0-9]*\),.*/\1/p')
echo "# test accuracy ${accuracy} (10000 images) of $(basename "$ckpt") after ${steps} steps;" \
  "wall: import ${t_import} s, train ${t_train} s, evaluate ${t_eval} s"
echo "# files    : $RESULTS_DIR/{train,test}.h5, $ckpt, test_eval.json, fashion_mnist_model.h5"
