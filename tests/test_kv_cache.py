"""
The pieces both key/value caches share (src/runtime/decoding/kv_cache.py), at their
edges: the start that every prompt of a batch shares stops at the first
column where two prompts differ and before the shortest prompt's last token
(prompts all alike, one prompt, a prompt of one token, a difference in the
first column); a query sees the keys up to its own position, itself
included; keys and values are written at each row's own positions, keys
rotated there as apply_rotary_emb rotates them, and a cache keeps the rows
asked for, in that order. Prompts all alike then decode
as sample decodes each.
"""

import torch

from runtime.decoding.greedy import greedy_decode
from runtime.decoding.kv_cache import KVCache, causal_mask, heads, shared_prefix, write
from submission import GPT, GPTConfig
from submission.attention import apply_rotary_emb
from submission.utils import sample


def padded(prompts):
    """The prompts right-padded with PAD (0) into idx (B, W), and their lengths (B,)."""
    lengths = torch.tensor([len(p) for p in prompts])
    idx = torch.zeros(len(prompts), int(lengths.max()), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        idx[row, :len(prompt)] = torch.tensor(prompt)
    return idx, lengths


def test_the_shared_start_stops_before_the_shortest_prompts_last_token():
    """Kills a shared start that takes in a prompt's last token (its logits are read from the rows' own
    columns) or runs past the whole width when every prompt is alike."""
    assert shared_prefix(*padded([[5, 6, 7, 2]] * 3)) == 3
    assert shared_prefix(*padded([[5, 6, 7, 2]])) == 3
    assert shared_prefix(*padded([[5, 6, 2], [5, 6, 2, 9]])) == 2
    assert shared_prefix(*padded([[5, 2], [5, 6, 7, 2]])) == 1
    assert shared_prefix(*padded([[2], [5, 6, 7, 2]])) == 0


def test_the_shared_start_stops_at_the_first_difference():
    """Kills a shared start counted over the columns alike anywhere, or from the last row's tokens."""
    assert shared_prefix(*padded([[5, 6, 7, 8, 2], [5, 9, 7, 8, 2], [5, 6, 7, 8, 3, 2]])) == 1
    assert shared_prefix(*padded([[4, 6, 7, 2], [5, 6, 7, 2]])) == 0
    assert shared_prefix(*padded([[5, 6, 7, 8, 2], [5, 6, 7, 8, 2], [5, 6, 3, 2]])) == 2


def test_a_query_sees_the_keys_up_to_its_own_position():
    """Kills a mask that hides a query's own key or shows it the next one."""
    mask = causal_mask(torch.tensor([[0, 2], [3, 1]]), 4)
    assert mask.shape == (2, 1, 2, 4)
    assert mask[:, 0].int().tolist() == [[[1, 0, 0, 0], [1, 1, 1, 0]], [[1, 1, 1, 1], [1, 1, 0, 0]]]


def test_keys_are_written_at_each_rows_own_positions_and_a_cache_keeps_the_rows_asked_for():
    """Kills a write at another row's positions or slot, and rows kept in another order."""
    cache = torch.zeros(2, 1, 4, 1)
    write(cache, torch.tensor([[1, 3], [0, 2]]), torch.tensor([[[[1.0], [2.0]]], [[[3.0], [4.0]]]]))
    assert cache[:, 0, :, 0].tolist() == [[0, 1, 0, 2], [3, 0, 4, 0]]
    torch.manual_seed(0)
    attn = GPT(GPTConfig(8, 8, n_layer=1, n_head=2, n_embd=8)).blocks[0].attn
    kv = KVCache(attn, 3, 4, torch.device("cpu"))
    kv.k = torch.arange(3.0)[:, None, None, None].expand(3, 2, 4, 4)
    kv.v = -kv.k
    kv.keep(torch.tensor([2, 0]))
    assert kv.k[:, 0, 0, 0].tolist() == [2, 0] and kv.v[:, 0, 0, 0].tolist() == [-2, 0]


def test_added_keys_are_rotated_at_each_rows_own_positions_as_apply_rotary_emb_rotates_them():
    """Kills KVCache.add keeping its keys unrotated or rotated at other positions, and a rotation that
    puts the rotated pairs' halves one after the other instead of side by side."""
    torch.manual_seed(0)
    attn = GPT(GPTConfig(8, 8, n_layer=1, n_head=2, n_embd=8, rope=True)).blocks[0].attn
    full = torch.randn(2, 6, 8)  # (B, T, d): row b's vectors at positions 0..5
    positions = torch.tensor([[0, 1, 2], [2, 3, 4]])
    x = full[torch.arange(2)[:, None], positions]  # (B, 3, d)
    kv = KVCache(attn, 2, 6, torch.device("cpu"))
    with torch.no_grad():
        k, v = kv.add(x, positions)
        expected = apply_rotary_emb(heads(attn, attn.key, full), attn.rope_cache)  # (B, nh, 6, hs)
    for row in range(2):
        assert torch.allclose(k[row][:, positions[row]], expected[row][:, positions[row]], atol=1e-6)


def test_prompts_all_alike_decode_as_sample():
    """Kills a batch of one question asked several times (the same name twice in a file) decoded wrong:
    every column is shared but the last token's."""
    torch.manual_seed(1)
    model = GPT(GPTConfig(10, 24, n_layer=2, n_head=2, n_embd=16)).eval()
    prompt = [3, 4, 5, 6, 2]
    expected = sample(model, torch.tensor([prompt]), 6)[0].tolist()
    assert greedy_decode(model, [prompt] * 3, 6) == [expected] * 3
