"""
Several processes, one run: PyTorch's own DistributedDataParallel, started by
torchrun (`NPROC=N ./run.sh <stage>`, or `torchrun --nproc_per_node=N
src/run.py ...`). torchrun sets RANK, LOCAL_RANK and WORLD_SIZE, and under it the run has a
process group, even of one process (so a one-GPU machine runs NCCL's code);
without it the run is one process of rank 0 and no group. Backend nccl on
CUDA, gloo elsewhere.
Process r trains on its share of every global batch (batches.py); DDP
averages the gradients; only rank 0 logs, draws progress bars (run.py sets
TQDM_DISABLE on the others before tqdm is imported) and writes files. Evaluation gives each process a contiguous share of the questions and
gathers the answers back in the questions' order.
"""

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Processes:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self):
        return self.rank == 0


def start(device_name):
    """The processes of this run, with the process group initialised under torchrun, and the
    device name this process uses (cuda:LOCAL_RANK on CUDA)."""
    world = int(os.environ.get('WORLD_SIZE', '1'))
    processes = Processes(int(os.environ.get('RANK', '0')), world, int(os.environ.get('LOCAL_RANK', '0')))
    if 'WORLD_SIZE' not in os.environ:
        return processes, device_name
    cuda = device_name.startswith('cuda') or (device_name == 'auto' and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(processes.local_rank)
        device_name = f'cuda:{processes.local_rank}'
    dist.init_process_group('nccl' if cuda else 'gloo')
    return processes, device_name


def stop():
    if dist.is_initialized():
        dist.destroy_process_group()


def share(items, processes):
    """This process's contiguous share of `items`."""
    per = -(-len(items) // processes.world)
    return items[processes.rank * per:(processes.rank + 1) * per]


def gathered(mine, processes):
    """Every process's list `mine`, joined in rank order (on every process)."""
    if processes.world == 1:
        return mine
    every = [None] * processes.world
    dist.all_gather_object(every, mine)
    return [item for part in every for item in part]
