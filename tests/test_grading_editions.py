"""
grader.py grades each course edition (src/grading/registry.py with
src/assignment/editions.py): the seed edition's tests as its @graded lines
give them, another edition's tests under that edition's ids, points and
thresholds, a second model's tests in its own editions only, and the choice
made by --edition on the command line.
"""

import runpy
from pathlib import Path

import pytest

from assignment.editions import EDITIONS, SEED_EDITION
from grading import cli, registry

GRADER = Path(__file__).resolve().parents[1] / "grader.py"
NOT_GRADED_HERE = {"rope_written"}  # the RoPE editions' written derivation, graded by hand


@pytest.fixture
def grader(registered):
    """grader.py's tests declared into an empty registry; its functions by name."""
    return runpy.run_path(str(GRADER), run_name="grader_editions")


def graded_now():
    return {t.test_id: (t.points, t.thresholds, t.function.__name__) for t in registry.TESTS.values()}


@pytest.mark.parametrize("name", list(EDITIONS))
def test_each_edition_grades_its_tables_tests_under_its_ids_points_and_thresholds(grader, name):
    """Kills an edition graded under the seed's ids, points or thresholds, another second model's test
    graded in it, or a test of its table left out."""
    registry.use_edition(name)
    wanted = {t.id: (float(t.points), dict(t.thresholds), t.judges) for t in EDITIONS[name].tests
              if t.judges not in NOT_GRADED_HERE}
    assert graded_now() == wanted
    assert registry.GRADING["edition"] == name


def test_the_seed_edition_is_graded_as_declared_and_comes_back_after_another(grader):
    declared = graded_now()
    assert {t.judges for t in EDITIONS[SEED_EDITION].tests} == {judge for _, _, judge in declared.values()}
    registry.use_edition("spring2026")
    registry.use_edition(SEED_EDITION)
    assert graded_now() == declared


def test_a_rope_tests_line_is_the_latest_rope_cohorts(grader):
    """Kills a RoPE test whose @graded line says other figures than any edition grades it with."""
    latest = {t.judges: t for t in EDITIONS["spring2026"].tests}
    for declared, function in registry.DECLARED:
        if declared["second_model"] == "rope":
            entry = latest[function.__name__]
            assert (declared["test_id"], declared["points"], declared["thresholds"]) == \
                   (entry.id, entry.points, dict(entry.thresholds))


def test_the_command_lines_edition_chooses_the_tests_and_an_unknown_one_is_refused(grader, capsys):
    assert cli.main(["--list", "--edition", "winter2025"], tests_file=str(GRADER)) == 0
    listed = capsys.readouterr().out
    assert "1h-0-hidden" in listed and "(min_accuracy 0.022)" in listed and "perceiver" not in listed
    with pytest.raises(SystemExit) as refused:
        cli.main(["--list", "--edition", "summer2025"], tests_file=str(GRADER))
    assert refused.value.code == 2 and "invalid choice: 'summer2025'" in capsys.readouterr().err


def test_a_hidden_bundles_test_keeps_its_own_id_and_points_in_any_edition(grader, tmp_path):
    """Kills a bundle's test named like a judge of grader.py (an instructor's own pretrained_dev for a term)
    given the edition table's points and thresholds in place of its own."""
    bundle_test = tmp_path / "term.py"
    bundle_test.write_text("from grading import graded\n\n\n"
                           "@graded('1f-1-hidden', points=9, visibility='hidden', timeout=60, min_accuracy=0.3)\n"
                           "def pretrained_dev(ctx):\n    '''this term's vanilla dev test'''\n    return 'ok'\n")
    registry.use_edition("spring2026")
    registry.load_bundle_tests([str(bundle_test)])
    test = registry.TESTS["1f-1-hidden"]
    assert (test.points, test.thresholds, test.source) == (9.0, {"min_accuracy": 0.3}, str(bundle_test))
    assert test.replaces.source == str(GRADER)


def test_an_unknown_edition_in_the_environment_is_one_line(grader, monkeypatch, capsys):
    monkeypatch.setenv(registry.EDITION_ENV, "summer2025")
    assert cli.main(["--list"], tests_file=str(GRADER)) == 2
    assert capsys.readouterr().err == (f"grader: $GRADER_EDITION is 'summer2025', no edition of the course; the "
                                       f"editions are {', '.join(EDITIONS)}\n")
