"""
The whole assignment as a student runs it, timed: the graded training
stages and the dev evaluations, each through ./run.sh in its own process,
and one table of stage, wall time, steps a second, peak GPU memory and dev
accuracy (docs/gpu.md holds the table measured on a GPU).

    PYTHONPATH=src python3 -m instructors.full_run --data_dir ../shared/data --out out/full

The vanilla chain (finetune without pretraining, its dev evaluation,
pretrain, finetune, its dev evaluation) and the perceiver chain (pretrain,
finetune, dev evaluation) run one after the other, or with --parallel side
by side, sharing the device: a GPU that the 3.3M-parameter model leaves
mostly idle does both in about the time of one, and each stage's figures are
then those of a shared device. `--chains vanilla,rope` runs the RoPE
edition's two chains instead. Params, predictions and each stage's log go
to OUT/files and OUT/logs, the run records to OUT/experiments, the table to
OUT/table.md. Options after `--` go to every stage (e.g. `-- --seed 0`).
"""

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from assignment.facts import STAGES

REPO = Path(__file__).resolve().parents[2]
# each variant's stages in the stage table's order, without the test-set evaluations (no labels to score)
CHAINS = {variant: tuple(stage.name for stage in STAGES if stage.variant == variant and stage.questions != 'test')
          for variant in ('vanilla', 'perceiver', 'rope')}
TRAINED = re.compile(r"^trained (\d+) steps in [\d.]+ s \(([\d.]+) steps/s\)(?:, peak GPU memory (\d+) MiB)?$",
                     re.MULTILINE)
CORRECT = re.compile(r"^Correct: ([\d.]+) out of ([\d.]+): ", re.MULTILINE)


@dataclass
class Figures:
    """What one stage's run showed."""
    stage: str
    seconds: float
    status: int
    steps: Optional[int] = None
    steps_per_second: Optional[float] = None
    peak_mib: Optional[int] = None
    correct: Optional[tuple] = None  # (correct, total) of a dev evaluation

    def row(self):
        cells = [self.stage, f"{self.seconds:.0f}" if self.status == 0 else f"failed ({self.status})",
                 '' if self.steps is None else str(self.steps),
                 '' if self.steps_per_second is None else f"{self.steps_per_second:.1f}",
                 '' if self.peak_mib is None else str(self.peak_mib),
                 '' if self.correct is None else f"{100 * self.correct[0] / self.correct[1]:.1f}% "
                                                 f"({self.correct[0]}/{self.correct[1]})"]
        return '| ' + ' | '.join(cells) + ' |'


def read_figures(stage, seconds, status, log):
    """The figures of a stage from its log: run.py's 'trained ...' and 'Correct: ...' lines."""
    figures = Figures(stage, seconds, status)
    trained = TRAINED.search(log)
    if trained:
        figures.steps, figures.steps_per_second = int(trained[1]), float(trained[2])
        figures.peak_mib = int(trained[3]) if trained[3] else None
    correct = CORRECT.search(log)
    if correct:
        figures.correct = (int(float(correct[1])), int(float(correct[2])))
    return figures


def table(figures):
    """The markdown table of the stages' figures, in the order given."""
    header = ['| stage | wall s | steps | steps/s | peak GPU MiB | dev accuracy |', '|---|---|---|---|---|---|']
    return '\n'.join(header + [f.row() for f in figures]) + '\n'


def run_stage(stage, out, environment, options):
    """./run.sh STAGE with OUT's folders, its output in OUT/logs/STAGE.log; its Figures."""
    log_path = out / 'logs' / f'{stage}.log'
    started = time.monotonic()
    with open(log_path, 'w', encoding='utf-8') as log:
        status = subprocess.run(['bash', str(REPO / 'run.sh'), stage, *options], env=environment, cwd=REPO,
                                stdout=log, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - started
    figures = read_figures(stage, seconds, status, log_path.read_text(encoding='utf-8', errors='replace'))
    print(figures.row(), flush=True)
    return figures


def run_chain(chain, out, environment, options):
    """The stages of `chain` in order, up to the first that fails."""
    done = []
    for stage in chain:
        done.append(run_stage(stage, out, environment, options))
        if done[-1].status:
            break
    return done


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--data_dir', default=str(REPO / 'data'), help="the five data files (default: ./data)")
    parser.add_argument('--out', required=True, help="folder for files, logs, records and table.md")
    parser.add_argument('--device', default='auto', help="DEVICE for every stage (default: auto)")
    parser.add_argument('--parallel', action='store_true', help="run the chains side by side")
    parser.add_argument('--chains', default='vanilla,perceiver', help="which chains, of vanilla, perceiver and rope (default: the seed edition's two)")
    parser.add_argument('options', nargs='*', help="options for every stage, after --")
    args = parser.parse_args(argv)
    unknown = [name for name in args.chains.split(',') if name not in CHAINS]
    if unknown or not os.path.isdir(args.data_dir):
        problem = f"unknown chain {unknown[0]}" if unknown else f"no data folder {args.data_dir}"
        print(f"full_run: error: {problem}", file=sys.stderr)
        return 1
    out = Path(args.out).resolve()
    for folder in ('files', 'logs', 'experiments'):
        (out / folder).mkdir(parents=True, exist_ok=True)
    environment = dict(os.environ, DATA_DIR=str(Path(args.data_dir).resolve()), OUT_DIR=str(out / 'files'),
                       EXPERIMENTS_DIR=str(out / 'experiments'), DEVICE=args.device, PYTHON=sys.executable)
    print(table([]), end='', flush=True)
    selected = [CHAINS[name] for name in args.chains.split(',')]
    with ThreadPoolExecutor(max_workers=len(selected) if args.parallel else 1) as pool:
        results = list(pool.map(lambda chain: run_chain(chain, out, environment, args.options), selected))
    figures = [f for chain in results for f in chain]
    (out / 'table.md').write_text(table(figures), encoding='utf-8')
    failed = [f.stage for f in figures if f.status]
    if failed:
        print(f"full_run: error: {failed[0]} failed; see {out / 'logs' / (failed[0] + '.log')}", file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
