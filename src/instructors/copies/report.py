"""
The copy report's text files: report.md (how the run was made, the verdicts'
counts, every flagged pair with its evidence, strongest first, the closest
independent pairs, the parameters' median distances, the hand-ins by
number, and the inputs not compared) and pairs.csv (one row a pair, ranked
as in the report).
"""

import csv
import datetime
import os
from dataclasses import dataclass, field

from .parameters import COPY_RATIO, MIN_REFERENCE, SUSPECT_RATIO
from .verdicts import ALPHA_COPY, ALPHA_SUSPECT, VERDICTS, shown_p

CSV_COLUMNS = ('a', 'b', 'verdict', 'identical_answers', 'shared_wrong', 'identical_params', 'answers_compared',
               'log10_p', 'params_ratio', 'known_source', 'evidence')
CLOSEST_SHOWN = 10
GUIDE = 'docs/copies.md'


@dataclass
class Run:
    """What a run compared, for the report's opening lines."""
    submissions: str
    known: list
    hidden: str = None
    labels: bool = False
    regenerated: object = None  # regeneration.Regenerated, when answers were regenerated
    not_regenerated: str = None  # why not, when a bundle was given
    date: str = field(default_factory=lambda: datetime.date.today().isoformat())


def counted(number, thing):
    return f"{number} {thing}" + ("" if number == 1 else "s")


def share(pair):
    return f"{pair.identical / pair.compared:.3f}" if pair.compared else ''


def known_source(pair, hand_ins):
    return '; '.join(hand_ins[i].path for i in (pair.first, pair.second) if hand_ins[i].known)


def write_csv(path, pairs, hand_ins):
    with open(path, 'w', newline='', encoding='utf-8') as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for pair in pairs:
            writer.writerow([hand_ins[pair.first].name, hand_ins[pair.second].name, pair.verdict, share(pair),
                             '' if pair.shared_wrong is None else pair.shared_wrong, ';'.join(pair.identical_params),
                             pair.compared, f"{pair.log10_p:.1f}", '' if pair.ratio is None else f"{pair.ratio:.2f}",
                             known_source(pair, hand_ins), ' | '.join(text for _, text in pair.evidence)])


def how_made(run, class_size, known_size):
    """The report's opening paragraph."""
    known = (f" and {counted(known_size, 'known hand-in')} ({', '.join(f'`{k}`' for k in run.known)})"
             if run.known else "")
    lines = [f"Made on {run.date} from {counted(class_size, 'hand-in')} of the class (`{run.submissions}`){known}."]
    if run.regenerated:
        r = run.regenerated
        lines.append(f"Answers were regenerated from the parameters with the hidden bundle `{run.hidden}` where "
                     f"they could be ({counted(r.files, 'parameters file')} of {counted(r.hand_ins, 'hand-in')} in "
                     f"{r.seconds:.0f} s), and compared as submitted elsewhere.")
    elif run.hidden:
        lines.append(f"Answers were compared as submitted ({run.not_regenerated}).")
    else:
        lines.append("Answers were compared as submitted (no hidden bundle).")
    lines.append("With the bundle's labels, the answers' evidence is the wrong answers two hand-ins share." if run.labels
                 else "Without labels, the answers' evidence is the identical answers, each weighed by how often the "
                      "class gives it.")
    return ' '.join(lines)


def flagged_section(pairs, hand_ins):
    lines = ["## Flagged pairs, strongest evidence first", ""]
    flagged = [pair for pair in pairs if pair.verdict != 'independent']
    for number, pair in enumerate(flagged, start=1):
        names = [f"{hand_ins[i].name}" + (f" (known, from `{hand_ins[i].path}`)" if hand_ins[i].known else "")
                 for i in (pair.first, pair.second)]
        lines += [f"### {number}. {pair.verdict}: {names[0]} and {names[1]}", ""]
        lines += [f"- {verdict}: {text}" for verdict, text in sorted(pair.evidence, key=lambda e: VERDICTS.index(e[0]))]
        if pair.compared:
            lines.append(f"- answers (regenerated where they were, else as submitted): {pair.identical} of "
                         f"{pair.compared} identical" + ("" if pair.shared_wrong is None else
                                                         f", {pair.shared_wrong} of them the same wrong answer"))
        lines.append("")
    return lines if flagged else lines + ["None.", ""]


def closest_section(pairs, hand_ins):
    independent = [pair for pair in pairs if pair.verdict == 'independent'][:CLOSEST_SHOWN]
    lines = ["## The closest independent pairs", "",
             "| a | b | identical answers | shared wrong answers | smallest adjusted p | parameters r |",
             "| --- | --- | --- | --- | --- | --- |"]
    for pair in independent:
        lines.append(f"| {hand_ins[pair.first].name} | {hand_ins[pair.second].name} | "
                     f"{pair.identical} of {pair.compared} | {'-' if pair.shared_wrong is None else pair.shared_wrong} | "
                     f"{shown_p(pair.log10_p)} | {'-' if pair.ratio is None else f'{pair.ratio:.2f}'} |")
    return lines + [""]


def write_markdown(path, run, pairs, hand_ins, comparisons, problems):
    class_size = sum(hand_in.known is None for hand_in in hand_ins)
    counts = {verdict: sum(pair.verdict == verdict for pair in pairs) for verdict in VERDICTS}
    lines = ["# Copy report", "", how_made(run, class_size, len(hand_ins) - class_size), "",
             f"A verdict is a reason to look, not a finding, and the report never changes a grade. `copy`: identical "
             f"parameters files; parameters of one run, or one trained from the other's (closer than "
             f"{COPY_RATIO:g} of the median distance between such files, or for a finetuning against another's "
             f"pretraining closer than the threshold below); or shared answers whose chance is below "
             f"{ALPHA_COPY:g} after Holm's correction over every comparison of the run. `suspect`: closer than "
             f"{SUSPECT_RATIO:g} of the median, or a chance below {ALPHA_SUSPECT:g}. What the report can and cannot "
             f"see: `{GUIDE}`.", "",
             "| verdict | pairs |", "| --- | --- |", *(f"| {v} | {counts[v]} |" for v in VERDICTS), ""]
    lines += flagged_section(pairs, hand_ins) + closest_section(pairs, hand_ins)
    lines += ["## Parameters: median distances (independent runs, mostly)", ""]
    lines += [f"- {a} against {b}: {c.median:.3f} over {c.taken} pairs; one run, or one trained from the other, "
              f"below {c.copy_below:.3f}" + ("" if c.own_median is None else
                                             f" (a finetuning is {c.own_median:.3f} from its own pretraining)")
              for (a, b), c in comparisons.items()]
    lines += ([f"- too few parameters files of one kind to judge distances ({MIN_REFERENCE} pairs or more are "
               f"needed)"] if not comparisons else [])
    lines += ["", "## Hand-ins", ""]
    lines += [f"{number}. {hand_in.name}" + (" (known)" if hand_in.known else "") + f": `{hand_in.path}`"
              for number, hand_in in enumerate(hand_ins)]
    lines += ["", "## Inputs not compared", ""] + ([f"- {line}" for line in problems] or ["None."])
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')


def write_texts(folder, run, pairs, hand_ins, comparisons, problems):
    """Write report.md and pairs.csv into `folder`."""
    write_markdown(os.path.join(folder, 'report.md'), run, pairs, hand_ins, comparisons, problems)
    write_csv(os.path.join(folder, 'pairs.csv'), pairs, hand_ins)
