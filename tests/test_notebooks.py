"""
The notebooks run headless and show what they say: each is executed with
nbclient in a python3 kernel, from its own folder, with its cell tagged
`parameters` replaced by a smaller setting; a last cell prints the variables
the checks need as JSON. Every notebook of the repository is kept without
outputs or execution counts.
"""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLAY_CHAR = REPO / "src" / "submission" / "mingpt-demo" / "play_char.ipynb"
ATTENTION = REPO / "notebooks" / "attention.ipynb"
ROPE = REPO / "notebooks" / "rope.ipynb"
RUNNER_MODULES = ("nbformat", "nbclient", "ipykernel", "matplotlib")
CELL_TIMEOUT = 300  # seconds a cell may take; the reduced settings need a few

PLAY_CHAR_PARAMETERS = """\
TEXT_PATH = 'data/wiki.txt'
BLOCK_SIZE = 32
N_LAYER = 2
N_HEAD = 2
N_EMBD = 64
MAX_WINDOWS = 6400
MAX_EPOCHS = 1
BATCH_SIZE = 32
LEARNING_RATE = 3e-3
SEED = 0
THREADS = 1  # two threads on a busy 2-core machine run several times slower than one
PROMPTS = ['Born in ', 'He was a ']
SAMPLE_STEPS = 40
"""

ATTENTION_PARAMETERS = """\
DIM = 16
N_KEYS = 6
SCALES = [0.5, 1, 2, 4, 8]
T = 20.0
ALPHA = 1e-4
N_SAMPLES = 300
SEED = 1
"""


def require_runner():
    missing = [name for name in RUNNER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"running notebooks needs {', '.join(missing)}, not installed here "
                    "(./run.sh test installs them from requirements.txt)")


def run_notebook(path, parameters, report):
    """
    Execute the notebook at `path` from its folder with the source of its
    `parameters` cell replaced by `parameters`, then a cell printing
    json.dumps(report), `report` being a Python expression. Returns the
    decoded report and the number of figures (image/png outputs).
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    tagged = [cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name} has {len(tagged)} cells tagged 'parameters', not one"
    tagged[0].source = parameters
    notebook.cells.append(nbformat.v4.new_code_cell(f"import json\nprint(json.dumps({report}))"))
    NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    printed = "".join(output.get("text", "") for output in notebook.cells[-1].outputs
                      if output.output_type == "stream" and output.name == "stdout")
    figures = sum("image/png" in output.get("data", {}) for cell in notebook.cells if cell.cell_type == "code"
                  for output in cell.outputs)
    return json.loads(printed), figures


def test_attention_notebook_copies_averages_and_two_heads_are_steadier():
    require_runner()
    report, figures = run_notebook(ATTENTION, ATTENTION_PARAMETERS, """{
        'scales': SCALES, 'copy_errors': copy_errors, 'average_error': average_error,
        'gap': float(np.linalg.norm(values[a] - values[b])),
        'single_head_spread': single_head_spread, 'two_head_spread': two_head_spread}""")
    errors = report["copy_errors"]
    assert len(errors) == len(report["scales"]) == 5
    assert all(later < earlier for earlier, later in zip(errors, errors[1:])), \
        f"the copy error should fall strictly as the scale grows: {errors}"
    assert errors[-1] < 0.01 * errors[0], errors
    # ||v_a - v_b|| is a few units; at t = 20 the average is off by about 1e-8
    assert report["gap"] > 1.0
    assert report["average_error"] < 1e-3, report["average_error"]
    assert report["single_head_spread"] >= 3 * report["two_head_spread"], report
    assert report["single_head_spread"] > 0.2 * report["gap"], report
    assert figures == 3


ROPE_PARAMETERS = """\
DIM = 8
POSITIONS = 24
N_SAMPLES = 20
SEED = 1
"""


def test_rope_notebook_shows_a_block_diagonal_rotation_and_scores_that_see_only_the_distance():
    require_runner()
    report, figures = run_notebook(ROPE, ROPE_PARAMETERS, """{
        'matrix_vs_pairs': matrix_vs_pairs, 'orthogonality': orthogonality, 'off_blocks': off_blocks,
        'relative': relative, 'diagonal_spread': diagonal_spread, 'distance_spread': distance_spread}""")
    for name in ("matrix_vs_pairs", "orthogonality", "relative", "diagonal_spread"):
        assert report[name] < 1e-10, report  # float64: equal up to rounding
    assert report["off_blocks"] == 0.0, report
    assert report["distance_spread"] > 1.0, report  # scores at different distances differ: (ii) is not vacuous
    assert figures == 2


def test_play_char_notebook_learns_and_samples_the_texts_characters():
    require_runner()
    report, figures = run_notebook(PLAY_CHAR, PLAY_CHAR_PARAMETERS, """{
        'losses': losses, 'samples': samples, 'characters': sorted(set(text)),
        'vocab_size': train_dataset.vocab_size}""")
    losses, samples, characters = report["losses"], report["samples"], set(report["characters"])
    assert len(characters) > 20 and report["vocab_size"] == len(characters) + 1
    # 200 steps, reported every 10 and at the last: the first loss is about log V
    assert len(losses) >= 10, losses
    assert sum(losses[-3:]) / 3 < 0.75 * losses[0], f"the loss did not fall: {losses}"
    prompts = ["Born in ", "He was a "]
    assert len(samples) == len(prompts)
    for prompt, sample in zip(prompts, samples):
        assert sample.startswith(prompt) and len(sample) == len(prompt) + 40, sample
        assert set(sample) <= characters, f"characters not in the text: {set(sample) - characters}"
    assert figures == 1


def repository_notebooks():
    """The .ipynb files git knows of or would add (tracked, or untracked and not ignored)."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.ipynb"],
                                cwd=REPO, capture_output=True, text=True)
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return sorted(REPO / line for line in listed.stdout.splitlines() if line)


def test_notebooks_are_kept_without_outputs():
    notebooks = repository_notebooks()
    assert PLAY_CHAR in notebooks and ATTENTION in notebooks, notebooks
    for path in notebooks:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        assert notebook["nbformat"] == 4, path
        assert notebook["metadata"]["kernelspec"]["name"] == "python3", path
        for number, cell in enumerate(notebook["cells"]):
            if cell["cell_type"] != "code":
                continue
            where = f"{path.relative_to(REPO)}, cell {number}"
            assert cell["outputs"] == [], f"{where} has outputs: clear them before committing"
            assert cell["execution_count"] is None, f"{where} has an execution count: clear it"
