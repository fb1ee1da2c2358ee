#!/usr/bin/env bash
# The assignment's stages. `./run.sh help` lists them; `./run.sh <stage> [options]`
# runs one, passing any options on to src/run.py (or to the stage's own script).
#
# Settings, from the environment:
#   DATA_DIR         the five data files (default: ./data)
#   OUT_DIR          params and predictions (default: src/submission)
#   EXPERIMENTS_DIR  training records, one folder a run (default: ./experiments)
#   TEST_FILE        questions for the *_eval_test_* stages (default: $DATA_DIR/birth_test_inputs.tsv)
#   DEVICE           auto (default: cuda, then mps, then cpu), cpu, cuda, cuda:N or mps
#   SMALL=1          smoke-test configuration: tiny model, one epoch (never for graded runs)
#   PYTHON           the Python to use (default: python3)
# Relative paths are taken from the folder you run this from.
set -eo pipefail

CALLER_DIR=$PWD
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}

absolute() {  # a path given by the user, made absolute against the folder run.sh was called from
    case "$1" in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s\n' "$CALLER_DIR/$1" ;;
    esac
}

DATA_DIR=$(absolute "${DATA_DIR:-$ROOT/data}")
OUT_DIR=$(absolute "${OUT_DIR:-$ROOT/src/submission}")
EXPERIMENTS_DIR=$(absolute "${EXPERIMENTS_DIR:-$ROOT/experiments}")
TEST_FILE=$(absolute "${TEST_FILE:-$DATA_DIR/birth_test_inputs.tsv}")
DEVICE=${DEVICE:-auto}

fail() {
    echo "run.sh: $*" >&2
    exit 1
}

STAGES="vanilla_finetune_without_pretrain vanilla_eval_dev_without_pretrain vanilla_eval_test_without_pretrain
vanilla_pretrain vanilla_finetune_with_pretrain vanilla_eval_dev_with_pretrain vanilla_eval_test_with_pretrain
perceiver_pretrain perceiver_finetune_with_pretrain perceiver_eval_dev_with_pretrain perceiver_eval_test_with_pretrain
london_baseline demo test bench plot release collect_submission help"

usage() {
    cat <<'EOF'
usage: ./run.sh <stage> [options]

Graded stages (files go to $OUT_DIR, default src/submission/; data from $DATA_DIR, default ./data):
  vanilla_finetune_without_pretrain   train a vanilla GPT from scratch on birth_places_train.tsv -> vanilla.model.params
  vanilla_eval_dev_without_pretrain   answer birth_dev.tsv with vanilla.model.params, print accuracy -> vanilla.nopretrain.dev.predictions
  vanilla_eval_test_without_pretrain  answer birth_test_inputs.tsv with vanilla.model.params -> vanilla.nopretrain.test.predictions
  vanilla_pretrain                    span-corruption pretraining on wiki.txt (hours on a GPU) -> vanilla.pretrain.params
  vanilla_finetune_with_pretrain      finetune vanilla.pretrain.params on birth_places_train.tsv -> vanilla.finetune.params
  vanilla_eval_dev_with_pretrain      answer birth_dev.tsv with vanilla.finetune.params, print accuracy -> vanilla.pretrain.dev.predictions
  vanilla_eval_test_with_pretrain     answer birth_test_inputs.tsv with vanilla.finetune.params -> vanilla.pretrain.test.predictions
  perceiver_pretrain                  span-corruption pretraining of the perceiver on wiki.txt -> perceiver.pretrain.params
  perceiver_finetune_with_pretrain    finetune perceiver.pretrain.params on birth_places_train.tsv -> perceiver.finetune.params
  perceiver_eval_dev_with_pretrain    answer birth_dev.tsv with perceiver.finetune.params, print accuracy -> perceiver.pretrain.dev.predictions
  perceiver_eval_test_with_pretrain   answer birth_test_inputs.tsv with perceiver.finetune.params -> perceiver.pretrain.test.predictions

Other stages:
  london_baseline                     dev accuracy of always answering "London" and the most frequent training place
  demo                                the whole experiment (baseline, without and with pretraining) on a small generated world, minutes on a CPU (src/demo.py)
  test                                the project's tests (python3 -m pytest -q; installs what is missing)
  bench                               plain vs fast paths, side by side on this machine (src/bench.py)
  plot <run>                          loss and learning-rate curves of a run -> experiments/<run>/curves.png (needs matplotlib)
  release                             instructors: cut the student starter and the autograder bundle (src/release/)
  collect_submission                  zip the deliverables of src/submission/ for upload (src/collect_submission.py)
  help                                this list

Settings: DATA_DIR, OUT_DIR, EXPERIMENTS_DIR, TEST_FILE, DEVICE, SMALL=1 (smoke test, not for grading), PYTHON.
Options after the stage go to src/run.py (python3 src/run.py --help lists them).
EOF
}

ensure_packages() {  # install, from requirements.txt, those of the given modules that are not importable
    command -v "$PYTHON" >/dev/null || fail "$PYTHON not found: install Python 3.9 or newer, or set PYTHON"
    local missing requirements=() module
    missing=$("$PYTHON" -c 'import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' "$@")
    [ -z "$missing" ] && return 0
    for module in $missing; do
        requirements+=("$(grep -E "^$module([=<>!~ ;]|$)" "$ROOT/requirements.txt" || echo "$module")")
    done
    echo "run.sh: installing ${requirements[*]} (not importable by $PYTHON)" >&2
    "$PYTHON" -m pip install "${requirements[@]}" \
        || fail "could not install ${requirements[*]}; see Dependencies in README.md"
}

need_data() {  # the data files a stage reads
    local file
    for file in "$@"; do
        [ -f "$file" ] && continue
        [ "$file" = "$TEST_FILE" ] && fail "$STAGE needs $file, which is not there; set TEST_FILE to the test questions"
        fail "$STAGE needs $file, which is not there; set DATA_DIR to the folder holding the data files (now $DATA_DIR)"
    done
}

need_params() {  # params file, the stage that makes it
    [ -f "$OUT_DIR/$1" ] || fail "$STAGE needs $OUT_DIR/$1, which ./run.sh $2 makes: run that stage first"
}

run_py() {  # src/run.py with this stage's records, device, size, and the user's options last
    local options=(--tb_expt_name "$STAGE" --experiments_dir "$EXPERIMENTS_DIR" --device "$DEVICE")
    case "${SMALL:-0}" in
        1 | true | yes)
            options+=(--small)
            echo "run.sh: SMALL=$SMALL: smoke-test configuration (tiny model, one epoch), not for grading" >&2 ;;
    esac
    "$PYTHON" "$ROOT/src/run.py" "$@" "${options[@]}" ${EXTRA[@]+"${EXTRA[@]}"}
}

finetune() {  # variant, params to read ('' for none), params to write
    need_data "$DATA_DIR/wiki.txt" "$DATA_DIR/birth_places_train.tsv"
    local reading=()
    [ -n "$2" ] && reading=(--reading_params_path "$OUT_DIR/$2")
    run_py --function finetune --variant "$1" --pretrain_corpus_path "$DATA_DIR/wiki.txt" \
        --finetune_corpus_path "$DATA_DIR/birth_places_train.tsv" --writing_params_path "$OUT_DIR/$3" \
        ${reading[@]+"${reading[@]}"}
}

pretrain() {  # variant, params to write
    need_data "$DATA_DIR/wiki.txt"
    run_py --function pretrain --variant "$1" --pretrain_corpus_path "$DATA_DIR/wiki.txt" \
        --writing_params_path "$OUT_DIR/$2"
}

evaluate() {  # variant, questions file, params to read, predictions to write
    need_data "$DATA_DIR/wiki.txt" "$2"
    run_py --function evaluate --variant "$1" --pretrain_corpus_path "$DATA_DIR/wiki.txt" \
        --eval_corpus_path "$2" --reading_params_path "$OUT_DIR/$3" --outputs_path "$OUT_DIR/$4"
}

script() {  # a project script another part of the project provides
    [ -f "$ROOT/$1" ] || fail "$STAGE: $1 is not in this checkout"
}

STAGE=${1:-}
[ $# -gt 0 ] && shift
EXTRA=("$@")
cd "$ROOT"

case "$STAGE" in
    help | -h | --help)
        usage ;;
    vanilla_finetune_without_pretrain)
        ensure_packages torch numpy tqdm
        finetune vanilla "" vanilla.model.params ;;
    vanilla_eval_dev_without_pretrain)
        ensure_packages torch numpy tqdm
        need_params vanilla.model.params vanilla_finetune_without_pretrain
        evaluate vanilla "$DATA_DIR/birth_dev.tsv" vanilla.model.params vanilla.nopretrain.dev.predictions ;;
    vanilla_eval_test_without_pretrain)
        ensure_packages torch numpy tqdm
        need_params vanilla.model.params vanilla_finetune_without_pretrain
        evaluate vanilla "$TEST_FILE" vanilla.model.params vanilla.nopretrain.test.predictions ;;
    vanilla_pretrain)
        ensure_packages torch numpy tqdm
        pretrain vanilla vanilla.pretrain.params ;;
    vanilla_finetune_with_pretrain)
        ensure_packages torch numpy tqdm
        need_params vanilla.pretrain.params vanilla_pretrain
        finetune vanilla vanilla.pretrain.params vanilla.finetune.params ;;
    vanilla_eval_dev_with_pretrain)
        ensure_packages torch numpy tqdm
        need_params vanilla.finetune.params vanilla_finetune_with_pretrain
        evaluate vanilla "$DATA_DIR/birth_dev.tsv" vanilla.finetune.params vanilla.pretrain.dev.predictions ;;
    vanilla_eval_test_with_pretrain)
        ensure_packages torch numpy tqdm
        need_params vanilla.finetune.params vanilla_finetune_with_pretrain
        evaluate vanilla "$TEST_FILE" vanilla.finetune.params vanilla.pretrain.test.predictions ;;
    perceiver_pretrain)
        ensure_packages torch numpy tqdm
        pretrain perceiver perceiver.pretrain.params ;;
    perceiver_finetune_with_pretrain)
        ensure_packages torch numpy tqdm
        need_params perceiver.pretrain.params perceiver_pretrain
        finetune perceiver perceiver.pretrain.params perceiver.finetune.params ;;
    perceiver_eval_dev_with_pretrain)
        ensure_packages torch numpy tqdm
        need_params perceiver.finetune.params perceiver_finetune_with_pretrain
        evaluate perceiver "$DATA_DIR/birth_dev.tsv" perceiver.finetune.params perceiver.pretrain.dev.predictions ;;
    perceiver_eval_test_with_pretrain)
        ensure_packages torch numpy tqdm
        need_params perceiver.finetune.params perceiver_finetune_with_pretrain
        evaluate perceiver "$TEST_FILE" perceiver.finetune.params perceiver.pretrain.test.predictions ;;
    london_baseline)
        ensure_packages torch numpy tqdm
        need_data "$DATA_DIR/birth_places_train.tsv" "$DATA_DIR/birth_dev.tsv"
        "$PYTHON" src/baseline.py --train_path "$DATA_DIR/birth_places_train.tsv" \
            --dev_path "$DATA_DIR/birth_dev.tsv" "$@" ;;
    demo)
        ensure_packages torch numpy tqdm
        script src/demo.py
        "$PYTHON" src/demo.py "$@" ;;
    test)
        ensure_packages torch numpy tqdm pytest
        status=0
        "$PYTHON" -m pytest -q "$@" || status=$?
        [ "$status" -eq 5 ] && echo "run.sh: pytest collected no tests: that is a failure" >&2
        exit "$status" ;;
    bench)
        ensure_packages torch numpy tqdm
        script src/bench.py
        "$PYTHON" src/bench.py "$@" ;;
    plot)
        [ $# -gt 0 ] || fail "plot needs a run name: ./run.sh plot <run> (runs are the folders of $EXPERIMENTS_DIR)"
        "$PYTHON" src/plot.py --experiments_dir "$EXPERIMENTS_DIR" "$@" ;;
    release)
        ensure_packages torch numpy tqdm
        script src/release/__main__.py
        PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m release "$@" ;;
    collect_submission)
        script src/collect_submission.py
        "$PYTHON" src/collect_submission.py "$@" ;;
    "")
        usage >&2
        exit 2 ;;
    *)
        echo "run.sh: unknown stage '$STAGE'; the stages are:" >&2
        echo "$STAGES" | tr ' \n' '  ' | fold -s -w 100 >&2
        echo >&2
        exit 2 ;;
esac
