#!/usr/bin/env bash
# The assignment's stages. `./run.sh help` lists them; `./run.sh <stage> [options]`
# runs one, passing any options on to src/run.py (or to the stage's own module). A
# graded stage also takes the course's words: `./run.sh <stage> [compile|no-compile]
# [backend]` (torch.compile, default no-compile; backend default inductor). The
# stage table is src/assignment/facts.py; src/ is the import root of every stage.
#
# Settings, from the environment:
#   DATA_DIR         the five data files (default: ./data)
#   OUT_DIR          params and predictions (default: src/submission; smoke/ for SMALL=1)
#   EXPERIMENTS_DIR  training records, one folder a run (default: ./experiments)
#   TEST_FILE        questions for the *_eval_test_* stages (default: $DATA_DIR/birth_test_inputs.tsv)
#   DEVICE           auto (default: cuda, then mps, then cpu), cpu, cuda, cuda:N or mps
#   SMALL=1          smoke-test configuration: tiny model, one epoch, files in smoke/ (never for grading)
#   NPROC=N          run the stage in N processes (torchrun, DistributedDataParallel; one per GPU)
#   RESUME=1         continue a training stage from its last checkpoint (as the option --resume)
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
OUT_DIR=${OUT_DIR:+$(absolute "$OUT_DIR")}  # unset: src/submission, or smoke/ for SMALL=1 (run.py decides)
EXPERIMENTS_DIR=$(absolute "${EXPERIMENTS_DIR:-$ROOT/experiments}")
TEST_FILE=$(absolute "${TEST_FILE:-$DATA_DIR/birth_test_inputs.tsv}")
DEVICE=${DEVICE:-auto}

fail() {
    echo "run.sh: $*" >&2
    exit 1
}

# The oldest Python the assignment runs on is PYTHON_MINIMUM of src/assignment/facts.py; every stage needs it.
command -v "$PYTHON" >/dev/null || fail "$PYTHON not found: install Python 3.10 or newer, or set PYTHON"
version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2]); sys.exit(sys.version_info < (3, 10))') \
    || fail "$PYTHON is Python ${version:-?}: the assignment needs Python 3.10 or newer; install it, or set PYTHON"

export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"

usage() {
    "$PYTHON" -m stages.help
}

ensure_packages() {  # install, from requirements.txt, those of the given modules that are not importable
                    # (module:package where the two names differ, e.g. yaml:pyyaml)
    local missing requirements=() module package
    missing=$("$PYTHON" -c 'import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m.split(":")[0]) is None))' "$@")
    [ -z "$missing" ] && return 0
    for module in $missing; do
        package=${module#*:}
        requirements+=("$(grep -E "^$package([=<>!~ ;]|$)" "$ROOT/requirements.txt" || echo "$package")")
    done
    echo "run.sh: installing ${requirements[*]} (not importable by $PYTHON)" >&2
    "$PYTHON" -m pip install "${requirements[@]}" \
        || fail "could not install ${requirements[*]}: install them by hand (requirements.txt lists them)"
}

run_py() {  # src/run.py (under torchrun when NPROC > 1) with this stage's files, records, device, size,
            # and the user's options last
    local options=(--data_dir "$DATA_DIR" --test_file "$TEST_FILE" --experiments_dir "$EXPERIMENTS_DIR"
                   --device "$DEVICE" ${OUT_DIR:+--out_dir "$OUT_DIR"}) launcher=("$PYTHON")
    case "${SMALL:-0}" in
        1 | true | yes) options+=(--small) ;;
    esac
    case "${RESUME:-0}" in
        1 | true | yes) options+=(--resume) ;;
    esac
    case "${NPROC:-1}" in
        1) ;;
        *[!0-9]* | 0) fail "NPROC=$NPROC: give the number of processes, e.g. NPROC=2" ;;
        *) launcher=("$PYTHON" -m torch.distributed.run --standalone --nproc_per_node="$NPROC") ;;
    esac
    "${launcher[@]}" "$ROOT/src/run.py" "$@" "${options[@]}" ${EXTRA[@]+"${EXTRA[@]}"}
}

course_words() {  # the course's words after a graded stage, [compile|no-compile] [backend], made run.py's options
    case "${EXTRA[0]:-}" in
        compile | no-compile)
            EXTRA=("--${EXTRA[0]}" "${EXTRA[@]:1}")
            case "${EXTRA[1]:-}" in
                "" | -*) ;;
                *) EXTRA=("${EXTRA[0]}" "--backend=${EXTRA[1]}" "${EXTRA[@]:2}") ;;
            esac ;;
    esac
}

instructors_stage() {  # a stage whose tools only the instructors' checkout has
    [ -d "$ROOT/src/instructors" ] || fail "$STAGE is an instructors' stage; this checkout has no src/instructors"
}

graded() {  # is $1 a graded stage of the stage table?
    "$PYTHON" -m stages.help --graded | grep -x -- "$1" >/dev/null  # no -q: grep reads the whole list
}

STAGE=${1:-}
[ $# -gt 0 ] && shift
EXTRA=("$@")
cd "$ROOT"

case "$STAGE" in
    help | -h | --help)
        usage ;;
    london_baseline)
        ensure_packages torch numpy tqdm
        "$PYTHON" -m stages.london_baseline --train_path "$DATA_DIR/birth_places_train.tsv" \
            --dev_path "$DATA_DIR/birth_dev.tsv" "$@" ;;
    score_dev)  # the hidden tests, as a local check of the prediction files that data/ has labels for
        ensure_packages torch numpy tqdm
        "$PYTHON" "$ROOT/grader.py" --labels "$DATA_DIR/birth_dev.tsv" --files "${OUT_DIR:-$ROOT/src/submission}" \
            "${@:-hidden}" ;;
    plot)
        [ $# -gt 0 ] || fail "plot needs a run name: ./run.sh plot <run> (runs are the folders of $EXPERIMENTS_DIR)"
        "$PYTHON" -m stages.plot --experiments_dir "$EXPERIMENTS_DIR" "$@" ;;
    collect_submission)
        "$PYTHON" -m stages.collect_submission "$@" ;;
    # >>> the instructors' stages: a release writes one refusal of them in their place
    demo)
        instructors_stage
        ensure_packages torch numpy tqdm
        "$PYTHON" -m instructors.demo "$@" ;;
    test)  # --quick: the edit loop's tier, without the tests marked slow; TEST_WORKERS=N test processes
        instructors_stage
        ensure_packages torch numpy tqdm pytest xdist:pytest-xdist hypothesis nbclient nbformat ipykernel \
            matplotlib yaml:pyyaml
        options=() status=0
        for option in "$@"; do
            [ "$option" = --quick ] && options+=(-m "not slow") || options+=("$option")
        done
        workers=${TEST_WORKERS:-$("$PYTHON" -c 'import os  # one more than the cores: many tests wait on processes
print(len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else os.cpu_count() + 1)')}
        # a thread that waits for another sleeps rather than spins: the workers share the cores
        OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} "$PYTHON" -m pytest -q -n "$workers" --dist loadgroup \
            ${options[@]+"${options[@]}"} || status=$?
        [ "$status" -eq 5 ] && echo "run.sh: pytest collected no tests: that is a failure" >&2
        exit "$status" ;;
    bench)
        instructors_stage
        ensure_packages torch numpy tqdm
        "$PYTHON" -m instructors.bench "$@" ;;
    mutate)
        instructors_stage
        if [[ " $* " != *" --check "* ]]; then  # the check of the tables needs only the standard library
            ensure_packages torch numpy tqdm pytest
            [[ " $* " == *" --plausible "* ]] || ensure_packages mutmut  # the plausible bugs need no mutmut
        fi
        "$PYTHON" -m instructors.mutate "$@" ;;
    release)
        instructors_stage
        ensure_packages torch numpy tqdm
        "$PYTHON" -m instructors.release "$@" ;;
    copies)
        instructors_stage
        ensure_packages torch numpy tqdm matplotlib yaml:pyyaml
        "$PYTHON" -m instructors.copies "$@" ;;
    # <<< the instructors' stages
    "")
        usage >&2
        exit 2 ;;
    *)
        if graded "$STAGE"; then
            ensure_packages torch numpy tqdm
            course_words
            run_py --stage "$STAGE"
        else
            echo "run.sh: unknown stage '$STAGE'; the stages are:" >&2
            usage | sed -n 's/^  \([a-z_]*\) .*/\1/p' | tr '\n' ' ' | fold -s -w 100 >&2
            echo >&2
            exit 2
        fi ;;
esac
