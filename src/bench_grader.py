"""
How long the autograder's basic suite takes, end to end, as a student runs it:

    python src/bench_grader.py [--repeat 3] [--submission DIR]

Runs `python grader.py basic` as a separate process `repeat` times and prints
each wall-clock time (and CPU time) and the best. The suite should finish in under 20
seconds on 2 CPU cores. `measure` is the function a project benchmark can call.
"""

import argparse
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRADER = os.path.join(ROOT, "grader.py")


def cpu_seconds_of_children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(repeat=3, submission=None):
    """
    (wall-clock seconds, CPU seconds of all its processes) of each run of the
    basic suite; raises if a run does not complete. CPU time hardly depends
    on what else the machine is doing; wall-clock time does.
    """
    command = [sys.executable, GRADER, "basic"] + (["--submission", submission] if submission else [])
    env = {k: v for k, v in os.environ.items() if k != "GRADER_HIDDEN_DIR"}
    runs = []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), cpu_seconds_of_children()
        completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        runs.append((time.perf_counter() - started, cpu_seconds_of_children() - cpu))
        if completed.returncode != 0:
            raise RuntimeError(f"grader.py exited with {completed.returncode}:\n{completed.stderr}")
    return runs


def main():
    parser = argparse.ArgumentParser(description="Time the autograder's basic suite.")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--submission", help="the package to grade (default: src/submission)")
    args = parser.parse_args()
    runs = measure(args.repeat, args.submission)
    for number, (wall, cpu) in enumerate(runs, start=1):
        print(f"run {number}: {wall:.2f} s wall clock, {cpu:.2f} s CPU")
    print(f"basic suite: best {min(wall for wall, _ in runs):.2f} s of {len(runs)} runs "
          f"on {os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
