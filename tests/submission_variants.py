"""
Broken and hostile variants of the reference solution, for tests/test_grader.py.

A Mutant is a small edit of one file of a copy of src/submission (a regex
substitution, inside the student-written regions unless it says otherwise),
with the grader tests to run on it and the ones it must fail.
"""

import re
from dataclasses import dataclass

REGION = re.compile(r"(### START_CODE_HERE ###)(.*?)(### END_CODE_HERE ###)", re.S)


@dataclass(frozen=True)
class Mutant:
    name: str
    filename: str
    pattern: str
    replacement: str
    run: tuple  # grader test ids to run
    failing: tuple  # the ones among them that must fail
    anywhere: bool = False  # edit outside the student regions too


CONFIG_TESTS = ("1c-1-basic", "1f-0-basic", "1g-0-basic")
SPAN_TESTS = ("1e-0-basic", "1e-1-basic", "1e-2-basic", "1e-3-basic")
MODEL_TESTS = ("1c-0-hidden", "1g-0-basic")

MUTANTS = [
    Mutant("wrong finetune epochs", "helper.py", r"\b75\b", "50", CONFIG_TESTS, ("1c-1-basic",)),
    Mutant("wrong pretrain lr", "helper.py", r"learning_rate=pretrain_lr", "learning_rate=6e-4",
           CONFIG_TESTS, ("1f-0-basic",)),
    Mutant("mask fraction 1/2", "dataset.py", r"len\(truncated\) // 2", "len(truncated)",
           SPAN_TESTS, ("1e-3-basic",)),
    Mutant("mask missing from output", "dataset.py", r"prefix \+ self\.MASK_CHAR \+ suffix", "prefix + suffix",
           SPAN_TESTS, SPAN_TESTS),  # not a span corruption: none of part (e)
    Mutant("no truncation", "dataset.py", r"document\[:random\.randint\(4, int\(self\.block_size \* 7 / 8\)\)\]",
           "document", SPAN_TESTS, ("1e-0-basic",)),
    Mutant("perceiver without C", "model.py", r"self\.C = nn\.Parameter\(", "self.C = (",
           MODEL_TESTS, ("1g-0-basic",)),
    Mutant("non-causal attention mask", "attention.py",
           r"torch\.tril\((torch\.ones\(config\.block_size, config\.block_size\))\)", r"\1",
           MODEL_TESTS, ("1c-0-hidden", "1g-0-basic"), anywhere=True),
]

FAKE_REPORT = """1e-3-basic   span corruption: masked length about 1/4, random        5/5  pass
total: 64/64 points
{"score": 64.0, "execution_time": 1.0, "tests": []}
"""

# Code appended to the package's __init__.py; each runs when the submission is imported.
HOSTILE_IMPORTS = {
    "sys.exit(0) at import": "import sys\nsys.exit(0)\n",
    "os._exit(0) at import": "import os\nos._exit(0)\n",
    "prints fake pass lines and results.json": (
        "import os, sys\n"
        f"FAKE = {FAKE_REPORT!r}\n"
        "print(FAKE)\nsys.__stdout__.write(FAKE)\nos.write(1, FAKE.encode())\nos.write(2, FAKE.encode())\n"),
    "monkeypatches unittest and builtins": (
        "import builtins, math, unittest, statistics\n"
        "unittest.TestCase.assertEqual = unittest.TestCase.assertTrue = lambda *a, **k: None\n"
        "builtins.all = builtins.any = lambda *a, **k: True\n"
        "builtins.AssertionError = type('Never', (Exception,), {})\n"
        "math.isclose = lambda *a, **k: True\n"
        "statistics.mean = lambda data: 0.25\n"),
    "writes forged answers to every descriptor": (
        "import os\n"
        "for fd in range(3, 256):\n"
        "    try:\n"
        "        os.write(fd, b'0123\\n{\"ok\": true, \"value\": {}}')\n"
        "    except OSError:\n"
        "        pass\n"),
    "floods its output": "import sys\nsys.stdout.write('x' * (8 << 20))\n",
}

# Hostile edits at the start of every student region of a file.
HANG_IN_GETITEM = Mutant("infinite loop in __getitem__", "dataset.py", r"\A\n([ \t]*)",
                         "\n\\1while True:\n\\1    pass\n\\1", ("1e-0-basic", "1f-0-basic"), ("1e-0-basic",))
SYSTEM_EXIT_IN_HELPERS = Mutant("SystemExit inside the helpers", "helper.py", r"\A\n([ \t]*)",
                                "\n\\1raise SystemExit(0)\n\\1", ("1c-1-basic", "1f-0-basic"),
                                ("1c-1-basic", "1f-0-basic"))


def apply(mutant, package_dir):
    """Edit the copy of the package at `package_dir` as `mutant` says; fails when the edit no longer applies."""
    edit(package_dir, mutant.filename, mutant.pattern, mutant.replacement, mutant.anywhere, mutant.name)


def edit(package_dir, filename, pattern, replacement, anywhere=False, name=None):
    """Substitute `pattern` in package_dir/filename (inside its student regions unless `anywhere`)."""
    path = f"{package_dir}/{filename}"
    with open(path, encoding="utf-8") as f:
        source = f.read()
    if anywhere:
        edited, count = re.subn(pattern, replacement, source)
    else:
        count = 0

        def edit_region(match):
            nonlocal count
            body, n = re.subn(pattern, replacement, match.group(2))
            count += n
            return match.group(1) + body + match.group(3)

        edited = REGION.sub(edit_region, source)
    if count == 0:
        raise AssertionError(f"mutant {name or pattern!r} no longer applies to {filename}: "
                             "update tests/submission_variants.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(edited)


# Small edits of the reference, as real hand-ins make them: (file, pattern, replacement, anywhere).
EDITS = {
    "MLP as a plain nn.Sequential": (
        "model.py", r'(?s)class MLP\(nn\.Sequential\):\n    """.*?"""\n\n    def __init__\(self, config\):\n'
                    r"        super\(\)\.__init__\(\n(.*?)\n        \)\n",
        r"def MLP(config):\n    return nn.Sequential(\n\1\n    )\n", True),
    "x and y of block_size ids": ("dataset.py", r"self\.block_size - len\(text\)", "self.block_size + 1 - len(text)",
                                  False),
    "layer norm on the input instead of C": (
        "model.py", r"self\.attn\(x_input, self\.ln1\(self\.C\)\)", "self.attn(self.ln1(x_input), self.C)", False),
    "no residual on C": ("model.py", r"x = self\.C \+ self\.attn\(", "x = self.attn(", False),
    "perceiver flag forgotten": ("helper.py", r"    mconf\.perceiver = True\n", "", False),
    "one attention module shared by all blocks": (
        "model.py", r"( +)(self\.blocks = nn\.Sequential\(\*\[Block\(config\) for _ in range\(config\.n_layer\)\]\)\n)",
        r"\1\2\1for block in self.blocks:\n\1    block.attn = self.blocks[0].attn\n", True),
    "finetune() calls train()": ("helper.py", r"(trainer_obj = Trainer\(model, finetune_dataset, None, tconf\))",
                                 r"\1\n    train(model, 'finetuned.params', trainer_obj)", False),
    "a Trainer that takes 2 s to build": (
        "trainer.py", r"(    def __init__\(self, model, train_dataset, test_dataset, config\):\n)",
        r"\1        __import__('time').sleep(2)\n", True),
    "num_workers=0": ("helper.py", r"num_workers=4", "num_workers=0", False),
    "non-causal DownProjectBlock": ("model.py", r"( +)(x = self\.C \+ self\.attn\(x_input)",
                                    r"\1self.attn.mask.fill_(1)\n\1\2", False),
    "UpProjectBlock with swapped inputs": ("model.py", r"self\.attn\(self\.ln1\(y\), x_input\)",
                                           "self.attn(x_input, self.ln1(y))", False),
    "truncation to 3/4 of the block": ("dataset.py", r"7 / 8", "3 / 4", False),
    "truncation to half the block": ("dataset.py", r"7 / 8", "1 / 2", False),
    "C drawn with xavier_normal_": ("model.py", r"nn\.init\.xavier_uniform_\(self\.C\)",
                                    "nn.init.xavier_normal_(self.C)", False),
    "train() saves through the trainer's ckpt_path": (
        "helper.py", r"trainer_obj\.train\(\)\n    torch\.save\(model\.state_dict\(\), writing_params_path\)",
        "trainer_obj.config.ckpt_path = writing_params_path\n    trainer_obj.train()", False),
    "GPT.__init__ takes one more argument": (
        "model.py", r"(class GPT\(nn\.Module\):\n(?:.*\n)*?    def __init__\(self, config)\)",
        r"\1, output_layer_norm)", True),
    "the helpers pass GPT's extra argument": ("helper.py", r"GPT\(mconf\)", "GPT(mconf, True)", False),
    "all-zero span examples": ("dataset.py", r"return x, y", "return torch.zeros_like(x), torch.zeros_like(y)", False),
    "logits doubled": ("model.py", r"logits = self\.head\(x\)", "logits = 2 * self.head(x)", True),
    # the RoPE editions' part (h)
    "initialize_rope_model(mconf, bottleneck_dim=32), the Winter 2025 starter's": (
        "helper.py", r"def initialize_rope_model\(mconf, bottleneck_dim=None\)",
        "def initialize_rope_model(mconf, bottleneck_dim=32)", True),
    "initialize_rope_model(mconf), the later starters'": (
        "helper.py", r"def initialize_rope_model\(mconf, bottleneck_dim=None\)", "def initialize_rope_model(mconf)",
        True),
    "RoPE cache by torch.polar": (
        "attention.py", r"(?s)( +)theta = 10000\.0 .*?# \(max_positions, dim/2, 2\)\n",
        r"\1theta = 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim)  # (dim/2,)\n"
        r"\1angles = torch.outer(torch.arange(max_positions).float(), theta)  # (max_positions, dim/2)\n"
        r"\1rope_cache = torch.view_as_real(torch.polar(torch.ones_like(angles), angles))"
        r"  # (max_positions, dim/2, 2)\n", False),
    "RoPE rotation in complex numbers": (
        "attention.py", r"(?s)( +)T = x\.size\(-2\)\n.*?# \(\.\.\., T, dim\)\n",
        r"\1pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())  # (..., T, dim/2)\n"
        r"\1turns = torch.view_as_complex(rope_cache[:x.shape[-2]].contiguous())  # (T, dim/2)\n"
        r"\1rotated_x = torch.view_as_real(pairs * turns).flatten(-2).to(x.dtype)  # (..., T, dim)\n", False),
    "RoPE model keeps the learnt position embedding": (
        "model.py", r"if not config\.rope:\n(.*\n(?:.*\n)*?)( +)if self\.rope:\n",
        r"if True:\n\1\2if False:\n", True),
    "values rotated too": ("attention.py", r"( +)(k = apply_rotary_emb\(k, self\.rope_cache\)  # \(B, nh, T, hs\)\n)",
                           r"\1\2\1v = apply_rotary_emb(v, self.rope_cache)  # (B, nh, T, hs)\n", False),
}


def apply_edit(name, package_dir):
    """Apply the named edit of EDITS to the package copy."""
    filename, pattern, replacement, anywhere = EDITS[name]
    edit(package_dir, filename, pattern, replacement, anywhere, name)
