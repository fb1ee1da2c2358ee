"""
Several processes (src/runtime/training/distributed.py): torchrun's variables
make the processes of a run (rank, world, local rank) and its process group,
even of one process, on the backend and the device its device asks for; and
sharing the questions among processes: for any number of questions and of
processes, each question is answered once, no process holds more than its
even share, and the answers are gathered in the questions' order (a
hypothesis property, derandomized so that CI sees the same examples on every
run).
"""

import os

import pytest
import torch
import torch.distributed as dist
from hypothesis import given
from hypothesis import strategies as st

from runtime.training import distributed
from runtime.training.distributed import Processes

from runtime_helpers import EDGE

TORCHRUN_VARIABLES = ('WORLD_SIZE', 'RANK', 'LOCAL_RANK')


@EDGE
@given(count=st.integers(0, 40), world=st.integers(1, 12))
def test_every_question_is_answered_once_in_order_for_any_count_and_processes(count, world):
    """Kills a share that drops or repeats the questions past an even split (fewer questions than processes,
    a count the processes do not divide), gives a process more than its even share, or gathers the answers
    out of rank order."""
    questions = [f"Q{i}" for i in range(count)]
    shares = [distributed.share(questions, Processes(rank, world)) for rank in range(world)]
    assert [q for share in shares for q in share] == questions
    assert max(len(share) for share in shares) == -(-count // world)
    answers = [[f"A{q}" for q in share] for share in shares]

    def all_gather_object(every, mine):
        every[:] = answers
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(distributed.dist, "all_gather_object", all_gather_object)
        for rank in range(world):
            assert distributed.gathered(answers[rank], Processes(rank, world)) == [f"A{q}" for q in questions]


def test_the_main_process_is_global_rank_0_not_each_machines_first():
    """Kills a main process chosen by its local rank: the first process of a second machine would write
    the files too."""
    assert Processes().main and Processes(0, 8, 3).main
    assert not Processes(4, 8, 0).main


@pytest.fixture
def torchrun(monkeypatch):
    """start() under torchrun's variables, with a stand-in process group and GPUs: call it with the variables
    and the device name; it returns (processes, device name, the backend of the group made or None, the GPU set)."""
    def run(device_name, cuda_available, **variables):
        made, gpus = [], []
        for name in TORCHRUN_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(dist, "init_process_group", made.append)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda_available)
        monkeypatch.setattr(torch.cuda, "set_device", gpus.append)
        processes, device = distributed.start(device_name)
        return processes, device, made[0] if made else None, gpus
    return run


def test_torchrun_gives_each_process_its_rank_and_the_gpu_of_its_local_rank(torchrun):
    """Kills the rank and the local rank swapped, or a process put on the GPU of its global rank (process 5
    of 8 on the second machine uses that machine's GPU 1), or a GPU run on gloo."""
    for device_name in ('auto', 'cuda'):
        assert torchrun(device_name, True, WORLD_SIZE='8', RANK='5', LOCAL_RANK='1') == (
            Processes(5, 8, 1), 'cuda:1', 'nccl', [1])


def test_a_run_on_the_cpu_uses_gloo_even_where_there_is_a_gpu(torchrun):
    """Kills NCCL (GPU tensors only) chosen because the machine has a GPU, for a run told to use the CPU."""
    assert torchrun('cpu', True, WORLD_SIZE='2', RANK='1', LOCAL_RANK='1') == (Processes(1, 2, 1), 'cpu', 'gloo', [])
    assert torchrun('auto', False, WORLD_SIZE='2', RANK='0', LOCAL_RANK='0') == (Processes(0, 2, 0), 'auto', 'gloo',
                                                                                 [])


def test_torchrun_of_one_process_makes_a_group_and_a_plain_run_none(torchrun):
    """Kills the group left out under torchrun with one process (a one-GPU machine would then never run
    NCCL's code, nor DDP), or made without torchrun."""
    assert torchrun('auto', True, WORLD_SIZE='1', RANK='0', LOCAL_RANK='0') == (Processes(), 'cuda:0', 'nccl', [0])
    assert torchrun('cuda', True) == (Processes(), 'cuda', None, [])


def test_torchrun_makes_a_process_group_even_of_one_process(monkeypatch):
    """The group made for real, on gloo, and destroyed by stop(); none without torchrun."""
    assert distributed.start('cpu') == (Processes(), 'cpu') and not dist.is_initialized()
    distributed.stop()  # no group: nothing to destroy
    for name, value in dict(WORLD_SIZE='1', RANK='0', LOCAL_RANK='0', MASTER_ADDR='127.0.0.1',
                            MASTER_PORT=str(29400 + os.getpid() % 1000)).items():
        monkeypatch.setenv(name, value)
    try:
        processes, device = distributed.start('cpu')
        assert dist.is_initialized() and dist.get_backend() == 'gloo' and dist.get_world_size() == 1
        assert processes == Processes(0, 1, 0) and device == 'cpu'
    finally:
        distributed.stop()
    assert not dist.is_initialized()
