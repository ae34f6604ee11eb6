# %% [markdown]
# # 04 · Aligning packed (THD) sequence lengths for SP and CP
#
# Upstream: [verl PR #7702](https://github.com/verl-project/verl/pull/7702).
#
# verl feeds a batch of sequences of different lengths as a *jagged* (packed, "THD") tensor. The
# vision-language (VLM) path pads it into a rectangle `[B, L]` before the model. With Megatron's
# sequence parallelism (SP) on, the activations `[S, B, H]` are then scattered along S over the
# tensor-parallel (TP) ranks, which needs `S % tp == 0`. The VLM path padded to the longest sequence and
# nothing more, so the fused forward path with dynamic batch size and SP crashed whenever the longest
# sequence did not divide by TP. The fix pads once, at the model's entry, to a multiple of
# `tp*cp*2 if cp > 1 else tp`, and the fused path reuses that same function.
#
# **You will learn** what a jagged batch, its offsets and `cu_seqlens` are; how an unaligned length
# crashes the SP scatter; where `tp*cp*2` comes from (zigzag context parallelism, CP); why zigzag
# balances causal attention work; and why the padding belongs in one function that every path calls.
#
# **Time:** 40 minutes. **Assumes:** tensor shapes, causal attention, what tensor parallelism is.
#
# **Upstream files cited** (paths inside verl):
# - `verl/models/mcore/util.py::build_vlm_attn_mask_thd`: jagged `input_ids` -> padded ids and a bool
#   mask; since #7702 it pads the longest length up to `align_size = tp_size * cp_size * 2 if cp_size > 1
#   else tp_size`, like its sibling `build_vlm_attn_mask_bshd`. `preprocess_packed_seqs` in the same file
#   uses the same `align_size` for the text-only THD path.
# - `verl/models/mcore/model_forward.py` and `verl/models/mcore/model_forward_fused.py`: both call
#   `build_vlm_attn_mask_thd(input_ids, pad_token_id)` for vision models (one padding function, two paths).
# - Megatron-LM `megatron/core/tensor_parallel/mappings.py::_split_along_first_dim`: asserts "First
#   dimension of the tensor should be divisible by tensor parallel size".
#
# Facts checked against verl 0.9.1. All code here is our own (`verlstudy.lessons.l04_thd.thd`).

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu": where the toy model of section 5 runs
seed = 0
tp = 2  # tensor-parallel size for the fixed path (1..8)
cp = 2  # context-parallel size for the fixed path (1..4)
hidden = 16  # toy model width
vocab_size = 32

# %%
import torch
import torch.nn.functional as F

from verlstudy.kit.exercises import check_exercise
from verlstudy.kit.claims import claim, claims_table, expect_error, reset_claims
from verlstudy.kit.devices import pick_device, skip_unless
from verlstudy.kit.params import check_int
from verlstudy.kit.plots import line_plot
from verlstudy.kit.seeding import seed_everything
from verlstudy.lessons.l04_thd.thd import (
    TinyLM,
    align_size,
    aligned_length,
    causal_work,
    cu_seqlens,
    fused_logprobs,
    imbalance,
    minimal_align_size,
    pack_sequences,
    pad_nested,
    pad_nested_unaligned,
    padding_needed,
    plot_packing,
    rank_positions,
    seq_lengths,
    shard_lengths,
    sp_scatter,
    unfused_logprobs,
)

dev = pick_device(device)
seed_everything(check_int("seed", seed, minimum=0))
tp = check_int("tp", tp, minimum=1, maximum=8)
cp = check_int("cp", cp, minimum=1, maximum=4)
hidden = check_int("hidden", hidden, minimum=1, maximum=1024)
vocab_size = check_int("vocab_size", vocab_size, minimum=2, maximum=100_000)
reset_claims()

# %% [markdown]
# ## 1. Packed sequences: jagged tensors, offsets, cu_seqlens
# Three prompts+responses of 7, 4 and 9 tokens. A jagged nested tensor stores them back to back in one
# buffer (`values()`, the "THD" layout: total tokens x hidden) plus `offsets()`, where sequence i is
# `values()[offsets[i]:offsets[i+1]]`. Those offsets are what flash-attention and TransformerEngine call
# `cu_seqlens`. No token is wasted on padding.

# %%
lengths = [7, 4, 9]
sequences = [torch.randint(1, vocab_size, (n,)) for n in lengths]
input_ids = pack_sequences(sequences)
labels = pack_sequences([s.roll(-1) for s in sequences])  # next-token targets, same lengths
print("shape:", tuple(input_ids.shape[:1]), "+ jagged; values:", tuple(input_ids.values().shape))
print("offsets (cu_seqlens):", cu_seqlens(input_ids).tolist())
print("lengths:", seq_lengths(input_ids).tolist())
running_sum = torch.tensor(lengths).cumsum(0)
claim("cu_seqlens are the running sum of the lengths", torch.equal(cu_seqlens(input_ids)[1:].long(), running_sum))
claim("the packed buffer holds exactly the real tokens", input_ids.values().numel(), expected=sum(lengths))

# %% [markdown]
# A dense model layer wants a rectangle, so the VLM path pads to `[B, L]` and keeps a mask of the real
# tokens. Before #7702, `L` was the longest length. With `tp=2` the fix rounds it up to an even number:

# %%
plot_packing(lengths, tp=2, cp=1)
padded, mask = pad_nested(input_ids, 0, tp=2, cp=1)
print("padded:", tuple(padded.shape), " mask row sums:", mask.sum(dim=1).tolist())
claim("mask row sums equal the sequence lengths", mask.sum(dim=1).tolist() == lengths)
claim("padded positions hold the pad id", bool((padded[~mask] == 0).all()))

# %% [markdown]
# ## 2. The crash
# Before the fix, the fused path padded to the longest sequence, 9 tokens, and went into a model with
# SP at TP=2. The embedding output is transposed to Megatron's `[S, B, H]` and scattered along S: 9 rows
# cannot be split into 2 equal halves, and Megatron's `_split_along_first_dim` stops with an assert.
# `sp_scatter` is our stand-in: it raises the same assertion (an `AssertionError`).

# %%
torch.manual_seed(seed)
model = TinyLM(vocab_size, hidden)
longest_padded, _ = pad_nested_unaligned(input_ids, 0)
embedded = model.embed(longest_padded).transpose(0, 1)  # [S, B, H]
print("pre-fix [S, B, H]:", tuple(embedded.shape))
with expect_error(AssertionError, match="divisible by tensor parallel size"):
    sp_scatter(embedded, tp=2, rank=0)
with expect_error(AssertionError):
    fused_logprobs(model, input_ids, labels, 2, 1, pad_fn=pad_nested_unaligned)

# %% [markdown]
# With context parallelism the unaligned length breaks even earlier: the zigzag split (section 4) needs
# the sequence to divide by `2*cp`:

# %%
with expect_error(ValueError, match="2*cp"):
    unfused_logprobs(model, input_ids, labels, 1, 2, pad_fn=pad_nested_unaligned)

# %% [markdown]
# ## 3. The arithmetic: where `tp*cp*2` comes from
# - SP alone: each of the `tp` ranks takes `S/tp` rows, so `S % tp == 0`.
# - Zigzag CP cuts the sequence into `2*cp` equal chunks, so `S % (2*cp) == 0`; each CP rank then holds
#   `S/cp` tokens and scatters *those* over its TP group, so `(S/cp) % tp == 0`, i.e. `S % (tp*cp) == 0`.
# - `tp*cp*2` is a multiple of both, so upstream pads to it: `pad = (align - L % align) % align`. The
#   outer `% align` makes an already aligned length get 0, not a whole extra block.
#
# Upstream's example length was "4026 tokens, TP=2". 4026 is even, so at TP=2 it needs **no** padding
# and could not have crashed. The settings below show which ones do trigger it.

# %%
cases = [(4026, 2, 1), (4027, 2, 1), (4026, 4, 1), (4026, 1, 2), (4026, 2, 2), (9, 2, 1), (9, tp, cp)]
print(f"{'L':>5} {'tp':>3} {'cp':>3} {'align':>6} {'padded':>7} {'pad':>4}  tokens per (cp, tp) rank")
for length, t, c in cases:
    padded_len = aligned_length(length, t, c)
    shards = {n for row in shard_lengths(padded_len, t, c) for n in row}
    print(f"{length:>5} {t:>3} {c:>3} {align_size(t, c):>6} {padded_len:>7} {padding_needed(length, t, c):>4}  {shards}")
# An independent check: the padded length is the first multiple of the alignment at or after L.
assert all(aligned_length(L, t, c) == next(n for n in range(L, L + 64) if n % align_size(t, c) == 0)
           for L, t, c in cases)
claim("pad for 4026 tokens at TP=2 (no crash possible)", padding_needed(4026, 2, 1), expected=0,
      upstream="PR's example: 4026 tokens, TP=2")
claim("pad for 4026 tokens at TP=4", padding_needed(4026, 4, 1), expected=2)
claim("pad for 4026 tokens at TP=2, CP=2", padding_needed(4026, 2, 2), expected=6)
claim("pad for 4027 tokens at TP=2", padding_needed(4027, 2, 1), expected=1)

# %% [markdown]
# ## 4. Zigzag: why `2*cp` chunks
# Causal attention makes later tokens costlier: the query at position i looks at i+1 keys. Cut the
# sequence into `cp` contiguous parts and the last rank does most of the work while the others wait.
# Zigzag cuts `2*cp` chunks and gives rank r the chunks r and `2*cp-1-r`, one cheap and one expensive.

# %%
for split in ("contiguous", "zigzag"):
    print(f"{split:>10}:", [rank_positions(16, 2, r, split).tolist() for r in range(2)])

work_len, work_cp = 4096, 4
work = {split: causal_work(work_len, work_cp, split) for split in ("contiguous", "zigzag")}
line_plot({split: (list(range(work_cp)), w) for split, w in work.items()},
          title=f"Causal attention work per CP rank (S={work_len}, cp={work_cp})",
          xlabel="cp rank", ylabel="query-key pairs")
for split, w in work.items():
    print(f"{split}: busiest rank / mean = {imbalance(w):.3f}")

# %% [markdown]
# For `m = S/cp` tokens per rank the last contiguous rank does `(2cp-1)/cp` times the mean work as m
# grows (1.75 for cp=4); zigzag gives every rank exactly the same amount.

# %%
m = work_len // work_cp
claim("zigzag causal work is equal on every rank", len(set(work["zigzag"])) == 1)
claim("contiguous imbalance (busiest / mean)", imbalance(work["contiguous"]),
      expected=(2 * m * (work_cp - 1) + m + 1) / (work_cp * m + 1), rtol=1e-9)
claim("contiguous imbalance near (2cp-1)/cp", imbalance(work["contiguous"]),
      expected=(2 * work_cp - 1) / work_cp, rtol=1e-3)

# %% [markdown]
# Each zigzag rank still scatters its `S/cp` tokens over TP. With the aligned length every
# (cp rank, tp rank) gets a whole, equal slice:

# %%
padded_len = aligned_length(4026, tp, cp)
shards = shard_lengths(padded_len, tp, cp)
print(f"L=4026 -> {padded_len} at tp={tp}, cp={cp}; tokens per (cp rank, tp rank):", shards)
claim("every (cp, tp) rank gets an equal whole slice", {n for row in shards for n in row} == {padded_len // (tp * cp)})

# %% [markdown]
# ## 5. The fix in one place
# Upstream's `build_vlm_attn_mask_thd` is called by both `model_forward.py` and
# `model_forward_fused.py`. Our toy has the same two paths: `unfused_logprobs` materialises the
# `[B, L, V]` log-softmax, `fused_logprobs` computes the label log-probs from hidden states and the head
# weights on real tokens only. Both take the padding function as `pad_fn`; here we hand them one that
# counts its calls. The model runs its MLP shard by shard over every (cp, tp) rank.

# %%
pad_calls = []


def counted_pad(ids, pad_id, t, c):
    pad_calls.append(t * c)
    return pad_nested(ids, pad_id, t, c)


model_dev = model.to(dev)
ids_dev, labels_dev = input_ids.to(dev), labels.to(dev)
with torch.no_grad():
    unfused = unfused_logprobs(model_dev, ids_dev, labels_dev, tp, cp, pad_fn=counted_pad)
    fused = fused_logprobs(model_dev, ids_dev, labels_dev, tp, cp, pad_fn=counted_pad)
    unsharded = unfused_logprobs(model_dev, ids_dev, labels_dev, 1, 1)
print(f"tp={tp}, cp={cp}: {len(pad_calls)} calls to the one padding function; {fused.numel()} log-probs")
claim("fused and unfused paths agree within 1e-5", torch.allclose(fused, unfused, rtol=0, atol=1e-5))
claim("sharding over (cp, tp) changes no log-prob (within 1e-6)", torch.allclose(unfused, unsharded, rtol=0, atol=1e-6))
claim("one log-prob per real token (pads masked out)", fused.numel(), expected=sum(lengths))
claim("each path padded ids and labels with the same function", len(pad_calls), expected=4)

# %% [markdown]
# Labels and the loss must use the same aligned length. Pad the ids for TP=2 but the labels the old way,
# and the loss refuses the shapes:

# %%
ids_aligned, _ = pad_nested(input_ids, 0, 2, 1)
labels_old, _ = pad_nested_unaligned(labels, 0)
with torch.no_grad():
    logits = model.head(model.hidden_states(ids_aligned.to(dev), 2, 1)).cpu()
print("logits:", tuple(logits.shape), " labels:", tuple(labels_old.shape))
with expect_error(RuntimeError, match="Expected target size"):
    F.cross_entropy(logits.transpose(1, 2), labels_old)

# %% [markdown]
# ## Exercises
# **4.1** Write `my_aligned_length(length, tp, cp)`: the smallest multiple of the TP/CP alignment that is
# at least `length`. An already aligned length must stay as it is.

# %% tags=["solution", "exercise-4.1"]
def my_aligned_length(length: int, tp: int, cp: int) -> int:
    """Return the padded length for a sequence of `length` tokens under TP size `tp` and CP size `cp`.

    The result is an int: the smallest multiple of the TP/CP alignment that is >= `length`.
    """
    align = tp * cp * 2 if cp > 1 else tp
    return length + (align - length % align) % align


# %% tags=["checker", "exercise-4.1"]
check_exercise("4.1", my_aligned_length)

# %% [markdown]
# **4.2** Write `my_zigzag_positions(seq_len, cp, rank)`: the token positions (in order) that zigzag CP
# rank `rank` holds when a sequence of `seq_len` tokens (a multiple of `2*cp`) is split over `cp` ranks.
# With `cp == 1` the one rank holds everything.

# %% tags=["solution", "exercise-4.2"]
def my_zigzag_positions(seq_len: int, cp: int, rank: int) -> list[int]:
    """Return, in sequence order, the token positions (ints) that zigzag CP rank `rank` holds.

    `seq_len` is the sequence length (a multiple of 2*cp), `cp` the number of CP ranks, `rank` in [0, cp).
    """
    if cp == 1:
        return list(range(seq_len))
    chunk = seq_len // (2 * cp)
    first, second = rank, 2 * cp - 1 - rank
    return list(range(first * chunk, (first + 1) * chunk)) + list(range(second * chunk, (second + 1) * chunk))


# %% tags=["checker", "exercise-4.2"]
check_exercise("4.2", my_zigzag_positions)

# %% [markdown]
# **4.3** Upstream pads to `tp*cp*2`. Is that the *least* length multiple that both the zigzag split and
# the SP scatter accept? Write `my_minimal_align(tp, cp)` that returns the least one (hint: section 3's
# two conditions, and `math.lcm`).

# %% tags=["solution", "exercise-4.3"]
def my_minimal_align(tp: int, cp: int) -> int:
    """Return the least length multiple (an int > 0) that both the zigzag CP split and the SP scatter accept.

    `tp` is the tensor-parallel size, `cp` the context-parallel size (cp == 1: no context parallelism).
    """
    import math

    return math.lcm(2 * cp, tp * cp) if cp > 1 else tp


# %% tags=["checker", "exercise-4.3"]
check_exercise("4.3", my_minimal_align)
extra = {(t, c): align_size(t, c) // minimal_align_size(t, c) for t in (1, 2, 4, 8) for c in (2, 4)}
print("upstream align / least align:", extra)
claim("upstream's product is a multiple of the least alignment", all(
    align_size(t, c) % minimal_align_size(t, c) == 0 for t in range(1, 9) for c in range(1, 5)))
claim("with CP (TP 1..8, CP 2..4): product = 2 x least for even TP, = least for odd TP", all(
    align_size(t, c) == (2 if t % 2 == 0 else 1) * minimal_align_size(t, c) for t in range(1, 9) for c in range(2, 5)))
claim("upstream's alignment at TP=2, CP=2", align_size(2, 2), expected=8)
claim("least alignment at TP=2, CP=2", minimal_align_size(2, 2), expected=4)

# %% [markdown]
# For even TP the product is twice the least (e.g. TP=2, CP=2: 8 vs 4); for odd TP the two are equal.
# So upstream sometimes pads more than needed. The padding adds *columns* to the `[B, L]` rectangle, so
# it lands in every row: aligning the longest length adds up to `align - 1` padded positions per
# sequence row, up to `B * (align - 1)` per batch, and the product costs up to `align - least` columns
# (`B * (align - least)` positions) more than the least would. For a batch of 3 sequences, like section
# 1's, at TP=2, CP=2 that is up to 21 alignment pads, of which up to 12 are the product's extra. Upstream
# keeps it for the same rule as `preprocess_packed_seqs`: a choice, not a bug.

# %%
rows, up, least = len(lengths), align_size(2, 2), minimal_align_size(2, 2)
longest_lengths = range(1, 4 * up + 1)  # every remainder modulo the alignment, several times over
most_pads = max(rows * padding_needed(n, 2, 2) for n in longest_lengths)
most_extra = max(rows * (aligned_length(n, 2, 2) - -(-n // least) * least) for n in longest_lengths)
print(f"B={rows}, TP=2, CP=2: up to {most_pads} alignment pads per batch, up to {most_extra} beyond the least")
assert (most_pads, most_extra) == (rows * (up - 1), rows * (up - least))  # the bounds are reached
claim("alignment pads per batch of 3 at TP=2, CP=2, at most: B * (align - 1)", most_pads, expected=21)
claim("pads beyond the least per batch of 3 at TP=2, CP=2, at most: B * (align - least)", most_extra, expected=12)

# %% [markdown]
# ## On an accelerator
# With a GPU the jagged batch and the toy model move to CUDA; the padding, the sharded forward and the
# two paths must give the same log-probs as on the CPU.

# %% tags=["gpu"]
if skip_unless("cuda"):
    cpu_model, gpu_model = TinyLM(vocab_size, hidden), TinyLM(vocab_size, hidden).to("cuda")
    cpu_model.load_state_dict(model.state_dict())
    gpu_model.load_state_dict(model.state_dict())
    ids_gpu, labels_gpu = input_ids.to("cuda"), labels.to("cuda")
    with torch.no_grad():
        on_cpu = fused_logprobs(cpu_model, input_ids, labels, tp, cp)
        on_gpu = fused_logprobs(gpu_model, ids_gpu, labels_gpu, tp, cp).cpu()
        gpu_unfused = unfused_logprobs(gpu_model, ids_gpu, labels_gpu, tp, cp).cpu()
    claim("GPU fused log-probs match the CPU within 1e-4", torch.allclose(on_gpu, on_cpu, rtol=0, atol=1e-4))
    claim("GPU fused and unfused agree within 1e-4", torch.allclose(on_gpu, gpu_unfused, rtol=0, atol=1e-4))

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form, so they can drift from it as verl moves. When
# the `verl` package is installed (`make setup` installs it without its heavy dependencies), the next cell
# loads upstream's own function from verl's source and compares it with ours on generated inputs, or says
# why this lesson has no single function to compare. A disagreement stops the notebook here; without verl
# the cell prints a one-line skip. `verlstudy verify-upstream` runs every lesson's comparison at once.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l04_thd.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - A packed (THD) batch is values + offsets (`cu_seqlens`); padding it to `[B, L]` adds a mask.
# - Megatron's SP scatter needs `S % tp == 0` and fails with an assert otherwise; an odd longest
#   sequence at TP=2 is enough. (Upstream's "4026 tokens, TP=2" needs no padding; 4027 at TP=2, or 4026 at
#   TP=4 or TP=2 with CP=2, does.)
# - Zigzag CP (`2*cp` chunks, rank r gets r and `2*cp-1-r`) balances causal work exactly; with it the
#   length must divide by `tp*cp*2` (upstream's rule; the least is `lcm(2cp, tp*cp)`).
# - Pad once, at the model's entry, in one function every path calls; pad labels and the loss mask to
#   the same aligned length, and mask the pads out.

# %%
claims_table()
