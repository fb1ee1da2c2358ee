"""
What a checkpoint (src/stages/checkpoint.py) promises beyond a resumed run's
parameters: Ctrl-C is the checkpointer's only while it trains.
"""

import os
import signal
import types

import pytest

from stages import checkpoint


@pytest.fixture
def former_sigint():
    """SIGINT handled, for the test, by a handler that lists the signals it gets; the real one after."""
    received = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    yield received
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_is_the_checkpointers_only_while_it_trains(tmp_path, former_sigint):
    """After training, well or not, a Ctrl-C reaches the handler from before it (not swallowed)."""
    path = str(tmp_path / "checkpoint.pt")
    one = types.SimpleNamespace(world=1, rank=0, main=True)
    with checkpoint.Checkpointer(path, {}, 10, one) as saver:
        assert signal.getsignal(signal.SIGINT) == saver.interrupt
    with pytest.raises(RuntimeError, match="training failed"):
        with checkpoint.Checkpointer(path, {}, 10, one):
            raise RuntimeError("training failed")
    os.kill(os.getpid(), signal.SIGINT)
    assert former_sigint == [signal.SIGINT]
