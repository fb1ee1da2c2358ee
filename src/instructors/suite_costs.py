"""
What each test file of a whole run cost: the CPU seconds and the seconds in
its worker of every test file, summed from the junit XML of a run, most
CPU first.

    ./run.sh test --junitxml=run.xml
    PYTHONPATH=src python3 -m instructors.suite_costs run.xml [--top N]

tests/cpu_costs.py records each test's CPU seconds (its process's and those of
the processes it waited for, its fixtures' set-up included) as the property
cpu_seconds; a file's seconds in its worker are the junit times, which count
the waits of the other workers' load as well.
"""

import argparse
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict


def costs(xml_path):
    """{test file: [CPU seconds, seconds in its worker, tests]} of the run in the junit XML at xml_path."""
    found = defaultdict(lambda: [0.0, 0.0, 0])
    for case in ElementTree.parse(xml_path).getroot().iter("testcase"):
        module = [part for part in case.get("classname", "").split(".") if part.startswith("test_")]
        cost = found[module[-1] + ".py" if module else case.get("classname", "")]
        cost[0] += sum(float(p.get("value")) for p in case.iter("property") if p.get("name") == "cpu_seconds")
        cost[1] += float(case.get("time", 0))
        cost[2] += 1
    return dict(found)


def table(found, top=None):
    """Markdown lines: one row a file, most CPU first, then the whole run's sums."""
    rows = sorted(found.items(), key=lambda item: (-item[1][0], -item[1][1]))
    lines = ["| file | CPU s | s in its worker | tests |", "| --- | --- | --- | --- |"]
    lines += [f"| `{name}` | {cpu:.1f} | {wall:.1f} | {count} |" for name, (cpu, wall, count) in rows[:top]]
    cpu, wall, count = (sum(cost[i] for cost in found.values()) for i in range(3))
    lines.append(f"| all {len(found)} files | {cpu:.1f} | {wall:.1f} | {count} |")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description="CPU seconds of each test file of a run, from its junit XML.")
    p.add_argument("xml", help="the file of ./run.sh test --junitxml=FILE")
    p.add_argument("--top", type=int, default=None, help="only the N costliest files (the sums count all)")
    args = p.parse_args(argv)
    try:
        found = costs(args.xml)
    except (OSError, ElementTree.ParseError) as error:
        print(f"suite_costs: cannot read {args.xml}: {error}", file=sys.stderr)
        return 2
    if not found:
        print(f"suite_costs: {args.xml} holds no test", file=sys.stderr)
        return 2
    print("\n".join(table(found, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
