"""
The attacks students use against the autograder, for
tests/test_release_autograder_attacks.py: each is a hostile edit of a
hand-in built from the reference solution (code appended to its
__init__.py, or its files edited), the tests it is graded on, what each
test it breaks must say, and what the results must or must not hold.
"""

from dataclasses import dataclass, field

from grader_fixtures import PREDICTION_TESTS
from submission_variants import HOSTILE_IMPORTS


WITNESS = "wrong finetune epochs"  # a mutant failing 1c-1-basic, so the report shows what the attack printed
# The time limit of the attacks that never end: room to start the probe and reach the attack, which
# prints that it got there (their `shown`), before the grader stops it.
LIMIT = "3"


@dataclass(frozen=True)
class Attack:
    name: str
    code: str  # appended to the hand-in's __init__.py, after fill(); empty: the hand-in's files are edited
    tests: tuple  # the test ids graded
    broken: dict = field(default_factory=dict)  # test id -> what its output must say (it earns nothing)
    mutant: str = None  # a mutant of submission_variants applied too
    options: tuple = ()  # more grader options
    forbidden: tuple = ()  # text the results must not hold
    shown: str = None  # text the results must hold (the attack's own report)
    serial: bool = False  # run alone, after the others
    env: tuple = ()  # (name, value) pairs for run_autograder's environment


ATTACKS = [
    Attack("results-import", (
        "for _p in ({results!r}, {results!r} + '.partial'):\n"
        "    try:\n"
        "        open(_p, 'w').write({forged!r})\n"
        "        print('FORGED', _p)\n"
        "    except OSError as _e:\n"
        "        print('RESULTS DENIED', _p, _e.strerror)\n"),
        ("1c-1-basic", "1e-2-basic"), mutant=WITNESS, broken={"1c-1-basic": "max_epochs"},
        forbidden=("FORGED",), shown="RESULTS DENIED"),
    Attack("daemon", (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        _null = os.open(os.devnull, os.O_RDWR)\n"
        "        for _fd in range(3):\n"
        "            os.dup2(_null, _fd)\n"
        "        _end = time.time() + 60\n"
        "        while time.time() < _end:\n"
        "            try:\n"
        "                open({results!r}, 'w').write({forged!r})\n"
        "            except OSError:\n"
        "                pass\n"
        "            time.sleep(0.1)\n"
        "    os._exit(0)\n"
        "os.wait()\n"), ("1c-1-basic", "1e-2-basic")),
    Attack("read-hidden", (
        "import os, time\n"
        "def _look(path):\n"
        "    try:\n"
        "        text = open(path, errors='replace').read()\n"
        "    except OSError as e:\n"
        "        return 'HIDDEN DENIED ' + path + ' ' + e.strerror\n"
        "    _secret = {secret_head!r} + {secret_tail!r}\n"
        "    return 'LEAK ' + path + ' ' + text[:300] if _secret in text or path.endswith('birth_test.tsv') else ''\n"
        "_seen = set()\n"
        "_end = time.time() + 2\n"
        "while time.time() < _end:\n"
        "    _paths = [{source!r} + '/hidden/birth_test.tsv', {source!r} + '/hidden/birth_dev.tsv',\n"
        "              {source!r} + '/hidden/reference/model.py']\n"
        "    for _root, _dirs, _files in os.walk({work!r}):\n"
        "        _paths += [os.path.join(_root, f) for f in _files if f.endswith(('.py', '.tsv'))]\n"
        "    for _p in _paths:\n"
        "        _r = _look(_p)\n"
        "        if _r and _r not in _seen:\n"
        "            _seen.add(_r)\n"
        "            print(_r)\n"
        "    time.sleep(0.2)\n"),
        ("1c-0-hidden", "1c-1-basic"), mutant=WITNESS, broken={"1c-1-basic": "max_epochs"},
        forbidden=("LEAK",), shown="HIDDEN DENIED"),
    Attack("proc", (
        "import os\n"
        "_pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]\n"
        "print('PROC sees', len(_pids), 'processes')\n"
        "for _pid in set(_pids + [os.getppid()]) - set([0, os.getpid()]):\n"
        "    for _entry in ('environ', 'cmdline', 'mem', 'fd', 'maps'):\n"
        "        _path = '/proc/%d/%s' % (_pid, _entry)\n"
        "        try:\n"
        "            _owner = os.stat('/proc/%d' % _pid).st_uid\n"
        "            _data = os.listdir(_path) if _entry == 'fd' else open(_path, 'rb').read(200)\n"
        "        except OSError:\n"
        "            continue\n"
        "        if _owner != os.getuid():\n"
        "            print('READ', _path, _data)\n"),
        ("1c-1-basic",), mutant=WITNESS, broken={"1c-1-basic": "max_epochs"},
        forbidden=("READ /proc",), shown="PROC sees"),
    Attack("kill", (
        "import os, signal\n"
        "_ppid = os.getppid()\n"
        "for _sig in (signal.SIGSTOP, signal.SIGKILL):\n"
        "    for _target in ([_ppid] if _ppid > 0 else []) + [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
        "        if _target != os.getpid():\n"
        "            try:\n"
        "                os.kill(_target, _sig)\n"
        "            except OSError:\n"
        "                pass\n"
        "try:\n"
        "    os.kill(-1, signal.SIGKILL)\n"
        "except OSError:\n"
        "    pass\n"), ("1c-1-basic", "1e-2-basic")),
    Attack("edit-grader", (
        "import glob, os\n"
        "_targets = glob.glob({work!r} + '/*/grader.py') + glob.glob({work!r} + '/*/src/grading/*.py')\n"
        "_targets += glob.glob({work!r} + '/*/src/submission/*.predictions')\n"
        "print('EDIT tries', len(_targets), 'files')\n"
        "for _t in _targets:\n"
        "    for _how, _do in (('append', lambda p: open(p, 'a').write('\\nFORGED = 1\\n')),\n"
        "                      ('rename', lambda p: os.rename(p, p + '.old')),\n"
        "                      ('chmod', lambda p: os.chmod(p, 0o777))):\n"
        "        try:\n"
        "            _do(_t)\n"
        "            print('EDITED', _how, _t)\n"
        "        except OSError:\n"
        "            pass\n"),
        ("1c-1-basic", "1e-2-basic"), mutant=WITNESS, broken={"1c-1-basic": "max_epochs"},
        forbidden=("EDITED",), shown="EDIT tries"),
    Attack("fork-bomb", "import os\nprint('FORKING')\nwhile True:\n    os.fork()\n",
           ("1c-1-basic",), broken={"1c-1-basic": ""}, options=("--timeout", LIMIT), shown="FORKING",
           serial=True),
    Attack("memory-bomb", (
        "_hoard = []\n"
        "try:\n"
        "    while True:\n"
        "        _hoard.append(b'x' * (64 << 20))\n"
        "except MemoryError:\n"
        "    print('MEMORY stopped at', 64 * len(_hoard), 'MB')\n"
        "del _hoard\n"),
        ("1c-1-basic",), mutant=WITNESS, broken={"1c-1-basic": "max_epochs"}, options=("--memory-mb", "2048"),
        shown="MEMORY stopped at"),
    Attack("disk-fill", (
        "import os\n"
        "_total = 0\n"
        "_folders = (os.getcwd(), '/tmp', '/var/tmp', '/dev/shm', os.path.dirname(__file__))\n"
        "for _folder in _folders:\n"
        "    for _n in range(24):\n"
        "        try:\n"
        "            with open(os.path.join(_folder, 'atk-fill-%d' % _n), 'wb') as _f:\n"
        "                for _ in range(16):\n"
        "                    _total += _f.write(bytes(2 << 20))\n"
        "        except OSError:\n"
        "            break\n"
        "print('DISK wrote', _total >> 20, 'MB')\n"
        "for _folder in _folders:\n"
        "    for _n in range(24):\n"
        "        try:\n"
        "            os.remove(os.path.join(_folder, 'atk-fill-%d' % _n))\n"
        "        except OSError:\n"
        "            pass\n"),
        ("1c-1-basic",), mutant=WITNESS, broken={"1c-1-basic": "max_epochs"}, shown="DISK wrote"),
    Attack("output-flood", (
        "import os\n"
        "_chunk = b'y' * (1 << 20)\n"
        "for _ in range(2048):\n"
        "    os.write(1, _chunk)\n"), ("1c-1-basic",)),
    Attack("sleep", "import time\nprint('SLEEPING')\ntime.sleep(3600)\n",
           ("1c-1-basic",), broken={"1c-1-basic": "did not finish within the time limit"},
           options=("--timeout", LIMIT), shown="SLEEPING"),
    Attack("sigterm", (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('IGNORING SIGTERM')\n"
        "os.fork()\n"
        "while True:\n"
        "    time.sleep(0.1)\n"),
        ("1c-1-basic",), broken={"1c-1-basic": "did not finish within the time limit"},
        options=("--timeout", LIMIT), shown="IGNORING SIGTERM"),
    Attack("monkeypatch", HOSTILE_IMPORTS["monkeypatches unittest and builtins"] + (
        "import numpy\n"
        "numpy.allclose = numpy.array_equal = lambda *a, **k: True\n"
        "numpy.mean = lambda *a, **k: 0.25\n"),
        ("1e-2-basic", "1e-3-basic"), mutant="mask fraction 1/2", broken={"1e-3-basic": ""}),
    Attack("fake-report", HOSTILE_IMPORTS["prints fake pass lines and results.json"],
           ("1e-2-basic", "1e-3-basic"), mutant="mask fraction 1/2", broken={"1e-3-basic": "quarter"}),
    Attack("every-fd", HOSTILE_IMPORTS["writes forged answers to every descriptor"].replace(
        "range(3, 256)", "range(0, 1024)"),
        ("1c-1-basic", "1e-2-basic"),
        broken={"1c-1-basic": "tampered", "1e-2-basic": "tampered"}),
    Attack("network", (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'leak')\n"
        "    print('NETWORK reached the grader machine')\n"
        "except OSError as _e:\n"
        "    print('NETWORK refused:', _e)\n"),
        ("1c-1-basic",), mutant=WITNESS, broken={"1c-1-basic": "max_epochs"},
        forbidden=("NETWORK reached",), shown="NETWORK refused"),
]
DAEMON = next(a for a in ATTACKS if a.name == "daemon")
ATTACKS.append(Attack(
    "daemon-no-namespaces", DAEMON.code + "print('PROBE is process', os.getpid(), 'of', len(os.listdir('/proc')))\n",
    DAEMON.tests, mutant=WITNESS, broken={"1c-1-basic": "max_epochs"}, shown="PROBE is process",
    forbidden=("PROBE is process 1 ",), serial=True, env=(("GRADER_NAMESPACES", "0"),)))
LINKS = Attack("links", "", ("1c-1-basic", "1e-2-basic"),
               broken={"1c-1-basic": "", "1e-2-basic": ""})
LABELS = Attack("labels-as-predictions", "", PREDICTION_TESTS,
                broken={t: "regenerated from" for t in PREDICTION_TESTS})
OTHER_MODEL = Attack("other-models-predictions", "", ("1d-0-hidden", "1d-1-hidden"),
                     broken={"1d-0-hidden": "answers differ", "1d-1-hidden": "answers differ"})
HAND_IN_ATTACKS = {a.name: a for a in (LINKS, LABELS, OTHER_MODEL)}
EVERY_ATTACK = {a.name: a for a in ATTACKS + list(HAND_IN_ATTACKS.values())}

# The attacks that end on their own, touch nothing another of them uses, and print both that they ran to
# their end (`shown`, each its own text) and whether they got through (`forbidden`): graded in one run, one
# after the other in its hand-in, where each is judged on what it printed as in a run of its own.
TOGETHER = ("results-import", "read-hidden", "proc", "edit-grader", "network", "disk-fill")


def together(name, attacks):
    """One attack doing each of `attacks` in turn, graded on all their tests; they must share their mutant,
    options and environment, and agree on what each broken test says."""
    assert len({(a.mutant, a.options, a.env, a.serial) for a in attacks}) == 1, name
    assert len({a.shown for a in attacks}) == len(attacks) and all(a.shown for a in attacks), name
    broken = {}
    for attack in attacks:
        assert all(broken.setdefault(test, why) == why for test, why in attack.broken.items()), name
    tests = tuple(sorted({test for attack in attacks for test in attack.tests}))
    first = attacks[0]
    return Attack(name, "".join(a.code for a in attacks), tests, broken, first.mutant, first.options,
                  tuple(text for a in attacks for text in a.forbidden), None, first.serial, first.env)


TOGETHER_RUN = together("together", [EVERY_ATTACK[name] for name in TOGETHER])
