"""
The runner's result channel (grading/runner.py), the grading process's side
of a probe's answer: the output cap, the tail kept of a trusted process's
output, the run token an answer must carry, what a failed, missing or late
answer comes to, exit statuses in words, reading both pipes until they
close or the time limit, and the default limits the threat model promises.
"""

import json
import os
import selectors
import time
from pathlib import Path

import pytest

from grading import runner
from grading.runner import CappedBuffer, Limits, ProbeOutcome, TailBuffer

from grading_helpers import runner_for


def test_a_capped_buffer_keeps_the_start_and_counts_the_rest():
    buffer = CappedBuffer(5)
    buffer.add(b"abc")
    buffer.add(b"def\xc3")
    assert bytes(buffer.data) == b"abcde" and buffer.dropped == 2
    assert buffer.text() == "abcde\n[2 more bytes of output dropped]"
    whole = CappedBuffer(4)
    whole.add(b"ab\xc3\xa9")
    assert whole.text() == "abé" and whole.dropped == 0
    buffer.add(b"gh")
    assert bytes(buffer.data) == b"abcde" and buffer.dropped == 4
    broken = CappedBuffer(9)
    broken.add(b"ok\xff")
    assert broken.text() == "ok\ufffd"


def test_a_tail_buffer_keeps_the_last_bytes_and_reads_a_cut_character_as_a_replacement():
    """Kills a tail that keeps what follows the first `cap` bytes instead of the last `cap`, and one
    that decodes strictly: a trusted process's output cut inside a character raised in the grader."""
    tail = TailBuffer(4)
    tail.add(b"ab")
    assert tail.text() == "ab"
    tail.add(b"cd\xc3\xa9")
    assert bytes(tail.data) == b"cd\xc3\xa9" and tail.text() == "cd\u00e9"
    for chunk, text in ((b"f", "d\u00e9f"), (b"g", "\u00e9fg"), (b"h", "\ufffdfgh")):
        tail.add(chunk)
        assert tail.text() == text, chunk
    tail.add(b"0123456789")
    assert tail.text() == "6789"


def outcome(probes, raw, returncode=0, timed_out=False, dropped=0):
    buffer = CappedBuffer(1 << 10)
    buffer.add(raw)
    buffer.dropped = dropped
    return probes.outcome(returncode, timed_out, buffer, "printed", 1.6)


def test_only_an_answer_with_this_runs_token_is_taken(tmp_path):
    probes = runner_for(tmp_path)
    assert outcome(probes, b't0ken\n{"ok": true, "value": [1]}') == ProbeOutcome("ok", [1], "", "printed", 1.6)
    tampered = ProbeOutcome("error", None, "the result channel was tampered with", "printed", 1.6)
    for raw in (b'other\n{"ok": true, "value": 1}', b't0ken{"ok": true, "value": 1}', b'\nt0ken\n{"ok": true}',
                b't0ken\n{"ok": tru', b't0ken\n{"value": 1}', b't0ken\n[1]', b't0ken\n\xff'):
        assert outcome(probes, raw) == tampered, raw
    assert outcome(probes, b't0ken\n{"ok": true, "value": 1}', dropped=1) == tampered
    assert outcome(probes, b't0ken\n{"ok": true,\n "value": 2}\n').value == 2


def test_a_failed_answer_says_where_it_failed(tmp_path):
    probes = runner_for(tmp_path)
    for stage, words in (("import", "the submission failed to import"), ("probe", "the submission raised an error"),
                         ("grader", "the grader failed"), (None, "the grader failed")):
        message = {"ok": False, "stage": stage, "error": "Traceback"}
        found = outcome(probes, b"t0ken\n" + json.dumps(message).encode())
        assert found == ProbeOutcome("error", None, f"{words}:\nTraceback", "printed", 1.6)
    assert outcome(probes, b't0ken\n{"ok": 1, "value": 1}').reason == "the grader failed:\n"
    assert outcome(probes, b't0ken\n{"ok": true}').reason == "the grader failed:\n"


def test_no_answer_is_an_error_and_lateness_a_timeout(tmp_path):
    probes = runner_for(tmp_path)
    assert outcome(probes, b"", returncode=3) == ProbeOutcome(
        "error", None, "the submission's process ended without answering (exit code 3)", "printed", 1.6)
    late = outcome(probes, b't0ken\n{"ok": true, "value": 1}', timed_out=True)
    assert late == ProbeOutcome("timeout", None, "the submission did not finish within the time limit "
                                                 "(stopped after 2 s)", "printed", 1.6)


def test_exit_statuses_in_words():
    assert runner.describe_exit(None) == "exit status unknown"
    assert runner.describe_exit(0) == "exit code 0" and runner.describe_exit(2) == "exit code 2"
    assert runner.describe_exit(-9) == "killed by SIGKILL" and runner.describe_exit(-1) == "killed by SIGHUP"
    assert runner.describe_exit(-99) == "killed by signal 99"


class Exited:
    """A probe process that has ended (poll answers `code`)."""

    def __init__(self, code=0, pid=None):
        self.code, self.pid = code, pid

    def poll(self):
        return self.code


def test_collect_reads_both_pipes_until_they_close(tmp_path):
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    os.write(output_write, b"printed")
    os.write(result_write, b"answer")
    os.close(output_write)
    os.close(result_write)
    output, answer = CappedBuffer(100), CappedBuffer(100)
    timed_out = probes.collect(Exited(None), output_read, result_read, output, answer, time.monotonic() + 5)
    assert timed_out is False and output.text() == "printed" and answer.text() == "answer"
    with pytest.raises(OSError):
        os.close(output_read)


def test_collect_times_out_only_without_an_answer(tmp_path):
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    started = time.monotonic()
    assert probes.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9), started + 0.3)
    assert 0.3 <= time.monotonic() - started < 2
    output_read, output_write2 = os.pipe()
    result_read, result_write2 = os.pipe()
    os.close(result_write2)
    assert not probes.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9),
                               time.monotonic() + 0.3)
    for fd in (output_write, result_write, output_write2):
        os.close(fd)


def test_collect_times_out_when_only_the_output_closed(tmp_path):
    """Kills the output pipe's end taken for the answer's: a probe that closes its standard output and
    error but never answers, while still running, times out."""
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    os.close(output_write)
    assert probes.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9),
                          time.monotonic() + 0.3) is True
    os.close(result_write)


class Clock:
    """A monotonic clock whose readings are `start`, then `step` seconds more at each reading."""

    def __init__(self, start, step):
        self.now, self.step = start - step, step

    def monotonic(self):
        self.now += self.step
        return self.now


def test_collect_never_waits_past_the_deadline(tmp_path, monkeypatch):
    """Kills a wait measured from the wrong end (deadline + now for deadline - now): each wait is the
    shorter of a tenth of a second and the time left, so the last one ends at the deadline."""
    waits = []

    class Recording(selectors.DefaultSelector):
        def select(self, timeout=None):
            waits.append(timeout)
            return super().select(timeout)
    monkeypatch.setattr(selectors, "DefaultSelector", Recording)
    monkeypatch.setattr(runner, "time", Clock(100.0, 0.03))
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    assert probes.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9), 100.08)
    assert waits == pytest.approx([0.08, 0.05, 0.02])
    for fd in (output_write, result_write):
        os.close(fd)


def test_collect_stops_soon_after_the_process_is_gone(tmp_path):
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    started = time.monotonic()
    assert probes.collect(Exited(0), output_read, result_read, CappedBuffer(9), CappedBuffer(9), started + 5) is False
    assert runner.EXIT_GRACE_SECONDS <= time.monotonic() - started < runner.EXIT_GRACE_SECONDS + 0.55
    with pytest.raises(OSError):
        os.close(result_read)
    for fd in (output_write, result_write):
        os.close(fd)


def test_the_default_limits_are_the_threat_models():
    """Kills a default limit other than the one docs/threat-model.md promises an upload meets."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "threat-model.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| fork bomb"))
    limits = Limits()
    for promise in (f"at most {limits.processes} processes and threads",
                    f"files of at most {limits.file_bytes >> 20} MiB",
                    f"a {limits.disk_bytes >> 20} MiB private tmpfs as home",
                    f"{limits.output_bytes >> 10} KiB of output kept"):
        assert promise in row, promise
    assert limits.memory_bytes == 4096 << 20  # --memory-mb's default, which the row names


class ExitsLater:
    """A probe process that ends `after` seconds from now (poll answers 0 from then on)."""

    def __init__(self, after):
        self.ends = time.monotonic() + after

    def poll(self):
        return 0 if time.monotonic() >= self.ends else None


def test_collect_notices_an_exit_within_a_moment(tmp_path):
    """Kills the pipes waited on a second at a time: an exit (whose pipes a child still holds open) is
    noticed within a tenth of a second, and collect ends the grace period later."""
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    started = time.monotonic()
    assert probes.collect(ExitsLater(0.2), output_read, result_read, CappedBuffer(9), CappedBuffer(9),
                          started + 30) is False
    assert 0.2 + runner.EXIT_GRACE_SECONDS <= time.monotonic() - started < 0.2 + runner.EXIT_GRACE_SECONDS + 0.45
    for fd in (output_write, result_write):
        os.close(fd)
