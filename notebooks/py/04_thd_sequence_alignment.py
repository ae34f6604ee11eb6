# %% [markdown]
# # 04 · Aligning packed (THD) sequence lengths for SP and CP
#
# **Upstream.** [verl PR #7702](https://github.com/verl-project/verl/pull/7702). verl feeds a batch of sequences of
# different lengths as one packed ([THD](00_start_here.ipynb#THD)) tensor. Its vision-language (VLM) path pads the
# `input_ids` into a rectangle `[B, L]`; with Megatron's sequence parallelism ([SP](00_start_here.ipynb#SP)) the
# activations `[S, B, H]` are then scattered along S over the [TP](00_start_here.ipynb#TP) ranks, which needs
# `S % tp == 0`. The PR reports that the fused forward path (section 6) with dynamic batch size (micro-batches
# filled to a token budget) and SP crashed when the longest
# length did not divide by TP; its fix pads at the model's entry to a multiple of `tp*cp*2 if cp > 1 else tp` (with
# [CP](00_start_here.ipynb#CP)), and both forward paths use that one function.
#
# **You will** read verl's change (0.9.0 -> 0.9.1) on screen, make the scatter fail and pass with verl's own
# function, derive `tp*cp*2` from the [zigzag](00_start_here.ipynb#zigzag) split and see it drawn, predict the packed
# length, see what a wrong mask does, and write guard tests of the kind #7702 would need.
#
# **Time:** 40 minutes. **Assumes:** tensor shapes, causal attention, what tensor parallelism is.
# Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu": where the toy model of section 6 runs
seed = 0
tp = 2  # tensor-parallel size for the fixed path (1..8)
cp = 2  # context-parallel size for the fixed path (1..4)
hidden = 16  # toy model width
vocab_size = 32

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import pick_device
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.lessons.l04_thd.setup import check_parameters

dev = pick_device(device)
p = check_parameters(tp, cp, hidden, vocab_size)
tp, cp, hidden, vocab_size = p["tp"], p["cp"], p["hidden"], p["vocab_size"]
dev, seed = start_lesson(dev, seed, announce=False)  # the seed last: a bad size is named before a bad seed

# %% [markdown]
# The lesson's tools: the course's padding, splitting and toy model, verl's own functions loaded beside them
# (`up`), and the kit's helpers that show code.

# %%
import torch
import torch.nn.functional as F

from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.plots import line_plot
from verlstudy.kit.show import show_change, upstream_diff
from verlstudy.kit.upstream import upstream_cell
from verlstudy.lessons.l04_thd import upstream as up
from verlstudy.lessons.l04_thd.pictures import plot_zigzag
from verlstudy.lessons.l04_thd.thd import (
    align_size, aligned_length, causal_work, cu_seqlens, imbalance, minimal_align_size, pack_sequences, pad_nested,
    pad_nested_unaligned, padding_needed, plot_packing, rank_positions, seq_lengths, shard_lengths, sp_scatter,
)
from verlstudy.lessons.l04_thd.toy import TinyLM, fused_logprobs, thd_logprobs, unfused_logprobs

# %% [markdown]
# ## 1. Packed sequences: jagged tensors, offsets, cu_seqlens
# Three prompts+responses of 7, 4 and 9 tokens. A jagged nested tensor stores them back to back (`values()`, the "THD"
# layout: total tokens x hidden) plus `offsets()`: sequence i is `values()[offsets[i]:offsets[i+1]]`.

# %% [markdown]
# flash-attention and TransformerEngine (NVIDIA's fused kernels) call these offsets `cu_seqlens`. No token is wasted on
# padding.

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
# A VLM layer wants a rectangle, so the VLM path pads the ids to `[B, L]` and keeps a mask of the real
# tokens. Before #7702, `L` was the longest length. With `tp=2` the fix rounds it up to an even number:

# %%
plot_packing(lengths, tp=2, cp=1)
padded, mask = pad_nested(input_ids, 0, tp=2, cp=1)
print("padded:", tuple(padded.shape), " mask row sums:", mask.sum(dim=1).tolist())
claim("mask row sums equal the sequence lengths", mask.sum(dim=1).tolist() == lengths)
claim("padded positions hold the pad id", bool((padded[~mask] == 0).all()))

# %% [markdown]
# ## 2. The crash, with verl's own function

# %% [markdown]
# Padded to the longest sequence, 9 tokens, the ids go into a model with SP at TP=2. PR #7702 describes what follows:
# the embeddings are flattened to Megatron's `[S, B, H]` and scattered along S, and Megatron's
# `scatter_to_sequence_parallel_region` asserts (in `_split_along_first_dim`): 9 rows do not split into 2 equal halves.
# **The course's `sp_scatter` stands in for that scatter** (Megatron needs a GPU process group here) and raises the
# same assertion message, as an `AssertionError`.
#
# **The change, verl's own lines:** `build_vlm_attn_mask_thd` (verl/models/mcore/util.py), 0.9.0 -> 0.9.1. The diff
# holds two PRs: #7702's alignment and an earlier NPU fix (below).
#
# %% tags=["upstream-source", "nbval-ignore-output"]
upstream_diff("models/mcore/util.py", "build_vlm_attn_mask_thd")

# %% [markdown]
# Read it top to bottom. 0.9.0 padded with `to_padded_tensor(pad_token_id)`, which pads to the longest sequence.

# %% [markdown]
# 0.9.1 asks Megatron's `mpu` for the TP and CP sizes, computes `align_size = tp_size * cp_size * 2 if cp_size > 1
# else tp_size`, rounds the longest length up to it, and pads to `(batch_size, max_seqlen)`; the mask still marks
# each row's first `seqlen` positions.

# %% [markdown]
# The other change in this diff is not #7702's: 0.9.0 returned **no mask on [NPU](00_start_here.ipynb#NPU)**
# (`if is_npu_available: return input_ids_rmpad, None`). [PR #7372](https://github.com/verl-project/verl/pull/7372)
# removed that early return (its description: the VLM needs the `[B, S]` padding mask on NPU too) and renamed
# `input_ids_rmpad` to `input_ids_with_pad`.

# %% [markdown]
# #7372 was merged after 0.9.0's release branch was cut, so 0.9.1 is the first release where
# [Ascend](00_start_here.ipynb#Ascend) gets the mask (the BSHD sibling `build_vlm_attn_mask_bshd` still returns None on
# NPU).
#
# The course's toy makes #7702's change, from `pad_nested_unaligned` to `pad_nested`:

# %%
show_change(pad_nested_unaligned, pad_nested)

# %% [markdown]
# **Upstream.** The next cell loads `build_vlm_attn_mask_thd` from verl 0.9.0 (before #7702) and from
# 0.9.1 (after), with a stand-in for Megatron's `mpu` that answers TP=2, CP=1, pads the same batch with
# both, and hands each result to the mock scatter; then it compares 0.9.1's with the course's `pad_nested`.

# %%
torch.manual_seed(seed)
model = TinyLM(vocab_size, hidden)
where = "verl/models/mcore/util.py::build_vlm_attn_mask_thd"


def before_and_after_7702() -> None:
    old_ids, _ = up.vlm_mask_thd(tp=2, cp=1, release="0.9.0")(input_ids, 0)
    new_ids, new_mask = up.vlm_mask_thd(tp=2, cp=1)(input_ids, 0)  # the installed verl, 0.9.1
    print("verl 0.9.0 ids:", tuple(old_ids.shape), "  verl 0.9.1 ids:", tuple(new_ids.shape))
    with expect_error(AssertionError, match="divisible by tensor parallel size"):
        sp_scatter(model.embed(old_ids).transpose(0, 1), tp=2, rank=0)  # [S, B, H] with S = 9
    rows = [sp_scatter(model.embed(new_ids).transpose(0, 1), tp=2, rank=r).shape[0] for r in range(2)]
    ours_ids, ours_mask = pad_nested(input_ids, 0, tp=2, cp=1)
    claim("verl 0.9.0 pads to the longest length, 9: the mock SP scatter raises", old_ids.shape[1], expected=9,
          upstream=f"verl 0.9.0 {where}")
    claim("verl 0.9.1 pads to 10: each TP rank gets 5 rows", rows, expected=[5, 5], upstream=f"verl 0.9.1 {where}")
    claim("the course's pad_nested gives 0.9.1's ids and mask", torch.equal(ours_ids, new_ids)
          and torch.equal(ours_mask, new_mask), upstream=f"verl 0.9.1 {where}")


upstream_cell(before_and_after_7702, releases=["0.9.0"])

# %% [markdown]
# The course's toy reproduces the crash on its own, on both of its forward paths (section 6 builds them):

# %%
with expect_error(AssertionError, match="divisible by tensor parallel size"):
    fused_logprobs(model, input_ids, labels, 2, 1, pad_fn=pad_nested_unaligned)

# %% [markdown]
# With CP the toy fails earlier: its zigzag split refuses a length not divisible by `2*cp` (not a reported upstream
# failure).

# %% [markdown]
# verl's THD engine packs with `preprocess_thd_engine` (verl/models/mcore/util.py), whose alignment with its default
# `cp_layout="zigzag"` already includes `2*cp` (`"contiguous"` aligns to `tp*cp`); what upstream's VLM path did with CP
# before #7702 is not established here.

# %%
with expect_error(ValueError, match="2*cp"):
    unfused_logprobs(model, input_ids, labels, 1, 2, pad_fn=pad_nested_unaligned)

# %% [markdown]
# ## 3. The arithmetic: where `tp*cp*2` comes from
# - SP alone: each of the `tp` ranks takes `S/tp` rows, so `S % tp == 0`.
# - Zigzag CP cuts the sequence into `2*cp` equal chunks, so `S % (2*cp) == 0`; each CP rank then holds
#   `S/cp` tokens and scatters *those* over its TP group, so `(S/cp) % tp == 0`, i.e. `S % (tp*cp) == 0`.
# - `tp*cp*2` is a multiple of both, and 0.9.1's `build_vlm_attn_mask_thd` pads to it:
#   `pad = (align - L % align) % align`. The outer `% align` gives an aligned length 0, not a whole block.

# %% [markdown]
# The PR's example is "4026 tokens, TP=2". As written it is inconsistent: 4026 is even, so at TP=2 the
# scattered S would divide by 2.

# %% [markdown]
# The part of the PR we could read does not say which S the bridge scattered (that depends on the packing path of
# [Megatron-Bridge](https://github.com/NVIDIA-NeMo/Megatron-Bridge), NVIDIA's library that builds Megatron models from
# Hugging Face checkpoints; verl's `models/mcore/bridge.py` loads its `AutoBridge`), so the table only shows which
# settings would need padding.

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
claim("pad for 4026 tokens at TP=2 (the PR's example needs none)", padding_needed(4026, 2, 1), expected=0,
      upstream="PR #7702's example: 4026 tokens, TP=2")
claim("pad for 4026 tokens at TP=4", padding_needed(4026, 4, 1), expected=2)
claim("pad for 4026 tokens at TP=2, CP=2", padding_needed(4026, 2, 2), expected=6)
claim("pad for 4027 tokens at TP=2", padding_needed(4027, 2, 1), expected=1)

# %% [markdown]
# Is `tp*cp*2` the *least* multiple that both rules accept? Not for even TP: the least is
# `lcm(2*cp, tp*cp)`, half the product (TP=2, CP=2: 4, not 8). Upstream pads a few extra tokens for a
# rule that is easy to read, the same rule as its `preprocess_packed_seqs` and `preprocess_bshd_engine`.

# %%
claim("upstream's product is a multiple of the least alignment (TP 1..8, CP 1..4)", all(
    align_size(t, c) % minimal_align_size(t, c) == 0 for t in range(1, 9) for c in range(1, 5)))
claim("least alignment at TP=2, CP=2 (upstream's: 8)", minimal_align_size(2, 2), expected=4)

# %% [markdown]
# ## 4. Zigzag: why `2*cp` chunks
# Causal attention makes later tokens costlier: the query at position i sees i+1 keys. With `cp` contiguous parts, the
# last rank does most of the work while the others wait. Zigzag cuts `2*cp` chunks and gives rank r chunks r and
# `2*cp-1-r`, one cheap, one expensive.

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
# The picture: 24 aligned tokens, TP=3, CP=2 (align 12). Colour: the CP rank holding a position; digit: the TP rank of
# its SP slice.

# %% [markdown]
# Rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2; each rank's 12 tokens make 3 slices of 4, one on rank 0 spanning
# both its chunks.

# %%
_ = plot_zigzag(24, 3, 2)

# %% [markdown]
# Each zigzag rank still scatters its `S/cp` tokens over TP. With the aligned length every
# (cp rank, tp rank) gets a whole, equal slice:

# %%
padded_len = aligned_length(4026, tp, cp)
shards = shard_lengths(padded_len, tp, cp)
print(f"L=4026 -> {padded_len} at tp={tp}, cp={cp}; tokens per (cp rank, tp rank):", shards)
claim("every (cp, tp) rank gets an equal whole slice", {n for row in shards for n in row} == {padded_len // (tp * cp)})

# %% [markdown]
# ### Predict first: exercise 4.1
# **4.1 Predict a length.** verl's THD engine packs a micro-batch into one row; section 5 runs it. Write
# `my_packed_length(lengths, tp, cp)`: the packed row's total length over all CP ranks (`cu_seqlens_padded[-1]`,
# default zigzag layout, no FP8 padding (`use_fp8_padding`: each sequence padded further for FP8 block quantization,
# `verl/models/mcore/util.py`), no length bucket) for sequences of `lengths` tokens.

# %% [markdown]
# It is not the `[B, L]` size of the VLM ids: think about what the SP scatter and the zigzag split need when one row
# holds several sequences, each attending only to itself. Work `[7, 5, 9]` at TP=2, CP=2 by hand first.
#
# **Receives** a list of ints (the sequence lengths, >= 1) and two ints `tp`, `cp`; **returns** an int (a float, even a
# whole one, is refused). Leave the list as it was. Hints: `exercise_hint("4.1")`; `show_solution("4.1")` prints the
# solution.

# %% tags=["solution", "exercise-4.1"]
def my_packed_length(lengths: list[int], tp: int, cp: int) -> int:
    """Return the packed THD length (an int) for sequences of `lengths` tokens at TP size `tp`, CP size `cp`."""
    align = tp * cp * 2 if cp > 1 else tp
    return sum(n + (align - n % align) % align for n in lengths)


# %% tags=["checker", "exercise-4.1"]
check_exercise("4.1", my_packed_length)

# %% [markdown]
# ## 5. Upstream's THD VLM path: only the ids are padded
# In 0.9.1's `gptmodel_forward_model_engine` (model_forward.py) and `fused_forward_model_engine`
# (model_forward_fused.py), `build_vlm_attn_mask_thd` pads the VLM's `input_ids` and nothing else.

# %% [markdown]
# The labels go through `preprocess_thd_engine`, which packs them into one THD row, each sequence padded on its own,
# described by `cu_seqlens_padded`; the model's per-token outputs come back through `postprocess_thd_engine`, which
# cuts the row into the original lengths again.
#
# **Upstream.** The cell runs the three functions of verl/models/mcore/util.py on section 1's batch at TP=2, CP=1
# (`postprocess_thd_engine` gets the packed labels as if they were a model output).

# %%
def upstream_thd_path() -> None:
    ids, _ = up.vlm_mask_thd(tp=2, cp=1)(input_ids, 0)
    pre, post = up.thd_engine(tp=2, cp=1)
    packed, params, _ = pre(labels, pre_process=True, need_roll=True)  # as the engine calls it for labels
    back = post(packed[..., None].float(), params, labels, len(lengths))
    print("ids:", tuple(ids.shape), " labels:", tuple(packed.shape), " cu_seqlens_padded:",
          params.cu_seqlens_q_padded.tolist(), " unpacked lengths:", back.offsets().diff().tolist())
    util = "verl 0.9.1 verl/models/mcore/util.py"
    claim("the VLM ids are a [B, L] rectangle", tuple(ids.shape), expected=(3, 10), upstream=f"{util}::build_vlm_attn_mask_thd")
    claim("the labels are one packed THD row, never [B, L]", tuple(packed.shape), expected=(1, 22),
          upstream=f"{util}::preprocess_thd_engine")
    claim("outputs come back at the original lengths", back.offsets().diff().tolist(), expected=lengths,
          upstream=f"{util}::postprocess_thd_engine")


upstream_cell(upstream_thd_path)

# %% [markdown]
# So the ids and the labels differ in shape by design. verl converts the ids to `[B, L]` (#7948's "dense VLM
# conversion") and hands the model those ids plus the packed row's description (`packed_seq_params`); Megatron-Bridge's
# model repacks the `[B, L]` ids into that row ("Megatron-Bridge repacking").

# %% [markdown]
# The labels are packed separately: the fused path passes them to the model, the unfused path to
# the logits processor after it.

# %% [markdown]
# A
# real length bug of this path was fixed later (0.9.1's `build_vlm_attn_mask_thd` takes no THD metadata):
# [PR #7948](https://github.com/verl-project/verl/pull/7948) reports that with `pad_to_length_bucket` (a
# parameter of `preprocess_thd_engine` that rounds the packed row up to a multiple of a bucket size, added by
# [PR #7358](https://github.com/verl-project/verl/pull/7358) and already in 0.9.0) the THD engine advertised a
# bucketed length (2560 tokens in its example) while the VLM's dense conversion and the bridge's repacking used
# the unpadded one (2212), and the `cu_seqlens` check of GDN (Gated DeltaNet, the linear-attention layers of
# Qwen3.5, the model of the PR's run) failed.

# %% [markdown]
# On our batch, 0.9.1's `preprocess_thd_engine` with a bucket of 16
# makes the same kind of gap:

# %%
def upstream_bucket_gap() -> None:
    pre = up.thd_engine(tp=2, cp=1)[0]
    plain = int(pre(labels, pre_process=True)[1].cu_seqlens_q_padded[-1])
    advertised = int(pre(labels, pre_process=True, pad_to_length_bucket=16)[1].cu_seqlens_q_padded[-1])
    print(f"real tokens {sum(lengths)}; packed without a bucket {plain}; advertised with a bucket of 16 {advertised}")
    claim("with a length bucket of 16 the advertised THD length is 32", advertised, expected=32,
          upstream="verl 0.9.1 verl/models/mcore/util.py::preprocess_thd_engine (pad_to_length_bucket, #7358; the "
                   "gap #7948 reports)")


upstream_cell(upstream_bucket_gap)

# %% [markdown]
# ## 6. The fix in one place, in a toy with real attention
# 0.9.1's `build_vlm_attn_mask_thd` is called by both forward paths.

# %% [markdown]
# The toy has the same two paths: `unfused_logprobs` materialises the `[B, L, V]` log-softmax, `fused_logprobs`
# computes the label log-probs from hidden states and head weights on real tokens only. Both pad the ids only, through
# `pad_fn` (here one that counts its calls); the labels stay packed and the mask takes the outputs back to THD order,
# as in upstream's path above.

# %% [markdown]
# The model is one causal attention head: each CP rank holds its zigzag rows, its norm runs on the `tp` SP slices, its
# queries see keys by true position. The reference, `thd_logprobs`, runs it on the packed buffer with the mask built
# from `cu_seqlens`, unpadded and unsharded.

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
    reference = thd_logprobs(model_dev, ids_dev, labels_dev)
print(f"tp={tp}, cp={cp}: {len(pad_calls)} calls to the one padding function; {fused.numel()} log-probs")
claim("fused and unfused paths agree within 1e-5", torch.allclose(fused, unfused, rtol=0, atol=1e-5))
claim("sharded over (cp, tp) = the THD reference over cu_seqlens (1e-5)", torch.allclose(unfused, reference, rtol=0, atol=1e-5))
claim("one log-prob per real token (pads masked out)", fused.numel(), expected=sum(lengths))
claim("each path padded the ids once, and never the labels", len(pad_calls), expected=2)

# %% [markdown]
# Because each log-prob depends on the tokens before it, the rows must be where the model thinks they
# are. Hand the toy a contiguous split (rank r holds block r) while it assumes zigzag, and log-probs move:

# %%
def contiguous_split(x, cp, rank):
    return x.chunk(cp)[rank]


with torch.no_grad():
    wrong = unfused_logprobs(model_dev, ids_dev, labels_dev, 2, 2, split=contiguous_split)
    right = unfused_logprobs(model_dev, ids_dev, labels_dev, 2, 2)
moved = int((wrong - reference).abs().gt(1e-4).sum())
print(f"tp=2, cp=2: contiguous split moves {moved} of {wrong.numel()} log-probs, by up to "
      f"{(wrong - reference).abs().max():.2f} nats; zigzag moves {int((right - reference).abs().gt(1e-4).sum())}")
# how many move depends on the model's sizes (8 of 20 at the defaults, printed above); that some move does not
claim("a contiguous split changes log-probs of the toy at tp=2, cp=2", moved > 0)

# %% [markdown]
# **What a wrong mask does.** On this padded path pads trail each sequence, so causal attention alone hides them from
# real tokens; the mask only reads outputs back: `logp[mask]` takes real positions, in THD order, for the packed
# labels.

# %% [markdown]
# A mask shifted by one, or marking pads real, raises nothing but misreads the log-probs.

# %%
def shifted_mask(ids, pad_id, t, c):
    padded, mask = pad_nested(ids, pad_id, t, c)
    return padded, mask.roll(1, dims=1)  # the same count per row, one position late


def pads_marked_real(ids, pad_id, t, c):
    padded, mask = pad_nested(ids, pad_id, t, c)
    return padded, torch.ones_like(mask)


with torch.no_grad():
    wrong_mask = {name: unfused_logprobs(model_dev, ids_dev, labels_dev, tp, cp, pad_fn=fn)
                  for name, fn in (("shifted by one", shifted_mask), ("pads marked real", pads_marked_real))}
for name, got in wrong_mask.items():
    moved_mask = int((got - reference).abs().gt(1e-4).sum())
    print(f"mask {name}: {got.numel()} log-probs, {moved_mask} of them differ from the THD reference, no error")
    claim(f"a mask {name} silently changes log-probs", moved_mask > 0)

# %% [markdown]
# ## 7. Where labels do meet the padded length: BSHD with `forced_max_seqlen`
# In BSHD the labels *are* padded to a rectangle: 0.9.1's `preprocess_bshd_engine` pads them to `forced_max_seqlen`
# when the caller gives one (its docstring: the mini-batch's longest length), then aligns it.
# `build_vlm_attn_mask_bshd` takes `forced_max_seqlen` too, and its comment says why: the VLM ids must reach the same
# length, or logits and labels disagree in shape.
#
# **Upstream.** The cell pads section 1's labels with `preprocess_bshd_engine` at `forced_max_seqlen=12` and the ids
# with `build_vlm_attn_mask_bshd`, with it and without, then asks the toy for the loss.

# %%
def upstream_bshd_forced() -> None:
    build_bshd, pre_bshd = up.bshd_engine(tp=2, cp=1)
    bshd_labels = pre_bshd(labels, need_roll=False, forced_max_seqlen=12)[0]
    for forced in (12, None):
        ids, _ = build_bshd(input_ids, len(lengths), 0, forced_max_seqlen=forced)
        with torch.no_grad():
            logits = model.head(model.hidden_states(ids.to(dev), 2, 1)).cpu()
        print(f"forced_max_seqlen={forced}: logits {tuple(logits.shape)}, labels {tuple(bshd_labels.shape)}")
        if forced is None:
            with expect_error(RuntimeError, match="Expected target size"):
                F.cross_entropy(logits.transpose(1, 2), bshd_labels)
        else:
            claim("with forced_max_seqlen on both, ids and labels share [B, 12]", logits.shape[:2] == bshd_labels.shape,
                  upstream="verl 0.9.1 verl/models/mcore/util.py::build_vlm_attn_mask_bshd, preprocess_bshd_engine")


upstream_cell(upstream_bshd_forced)

# %% [markdown]
# ## Exercises
# **4.1** came before section 5, which answers it; still "not yet right"? Go back to it now:
# `exercise_hint("4.1")` prints the method.
#
# **4.2 Find a CP split bug.** A colleague's split gives rank r "one chunk from each half":

# %%
def suspect_split(x, cp, rank):
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[cp + rank]]) if cp > 1 else x


with torch.no_grad():
    suspect = unfused_logprobs(model_dev, ids_dev, labels_dev, 1, 2, split=suspect_split)
print("log-probs moved by the suspect split at tp=1, cp=2:", int((suspect - reference).abs().gt(1e-4).sum()))
held = torch.cat([suspect_split(torch.arange(16), 2, r) for r in range(2)])
claim("the suspect split holds every row exactly once (S=16, cp=2)", sorted(held.tolist()) == list(range(16)))

# %% [markdown]
# Every row is held exactly once, so a shape check passes, yet log-probs move. Write the guard that would
# have caught it: `my_split_guard(split_fn, seq_len, cp)` calls `split_fn(torch.arange(seq_len), cp, rank)`
# for every rank and raises `AssertionError` with a message that says which rank holds what (a bare `assert`
# without a message is refused) unless each rank holds exactly the rows zigzag gives it, in order. It must pass the correct split and catch this one and other plausible bugs.
#
# **Receives** `split_fn(rows, cp, rank) -> rows of that rank` (a 1-D tensor in, a 1-D tensor out), `seq_len` (a
# multiple of `2*cp` when `cp > 1`; any length at `cp = 1`, where there is no split) and `cp`; **returns** None when the split is right, **raises** `AssertionError` otherwise (any
# other exception is a bug in the guard). The checker hands it the zigzag split written three ways and more than 50
# generated wrong splits, some wrong on one rank only, with `cp` from 1 to 8.

# %% tags=["solution", "exercise-4.2"]
def my_split_guard(split_fn, seq_len: int, cp: int) -> None:
    """Raise AssertionError unless split_fn(rows, cp, rank) is the zigzag split for every rank; return None."""
    rows = torch.arange(seq_len)
    chunk = seq_len // (2 * cp) if cp > 1 else seq_len
    for rank in range(cp):
        pieces = (rank, 2 * cp - 1 - rank) if cp > 1 else (0,)
        want = [p for c in pieces for p in range(c * chunk, (c + 1) * chunk)]
        got = split_fn(rows, cp, rank).tolist()
        assert got == want, f"cp={cp} rank {rank} holds {got}; zigzag gives it {want}"


# %% tags=["checker", "exercise-4.2"]
check_exercise("4.2", my_split_guard)

# %% [markdown]
# **4.3 Write the guard test for #7702.** `my_padding_guard(pad_fn)` tests a padding function
# `pad_fn(input_ids, pad_token_id, tp, cp) -> (padded [B, L], mask [B, L])` on batches and sizes you
# choose, and raises `AssertionError` unless its output would survive the SP scatter and the zigzag split,
# its mask marks exactly the real tokens, and the real tokens stay in place. It must pass
# `build_vlm_attn_mask_thd` as 0.9.1 has it and fail 0.9.0's; pick your cases so that it does.
#
# **Receives** `pad_fn`; **returns** None when the padding is safe, **raises** `AssertionError` otherwise. A padding
# longer than the least aligned length is still safe (the checker hands your guard one); the checker also hands it
# more than 50 generated wrong paddings, among them some right on one-sequence batches, without CP, or for even
# `tp` only, and some whose lengths are right but whose mask or tokens are not.

# %% tags=["solution", "exercise-4.3"]
def my_padding_guard(pad_fn) -> None:
    """Raise AssertionError unless pad_fn's padded ids and mask are safe for SP and zigzag CP; return None."""
    for lens, t, c in (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3)):
        ids = pack_sequences([list(range(1, n + 1)) for n in lens])
        padded, mask = pad_fn(ids, 0, t, c)
        align = t * c * 2 if c > 1 else t
        assert padded.shape[1] >= max(lens) and padded.shape[1] % align == 0, f"S={padded.shape[1]}, tp={t}, cp={c}"
        assert mask.sum(dim=1).tolist() == lens, f"mask rows {mask.sum(dim=1).tolist()}, lengths {lens}"
        assert torch.equal(padded[mask], ids.values()), "real tokens moved or were dropped"


# %% tags=["checker", "exercise-4.3"]
check_exercise("4.3", my_padding_guard)

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
        gpu_reference = thd_logprobs(gpu_model, ids_gpu, labels_gpu).cpu()
    claim("GPU fused log-probs match the CPU within 1e-4", torch.allclose(on_gpu, on_cpu, rtol=0, atol=1e-4))
    claim("GPU sharded log-probs match the GPU THD reference within 1e-4",
          torch.allclose(on_gpu, gpu_reference, rtol=0, atol=1e-4))

# %% [markdown]
# ## Checked against upstream verl
# With verl installed, the next cell runs verl's own functions beside the course's on generated inputs; a disagreement
# stops the notebook, and without verl it prints one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l04_thd.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - A packed (THD) batch is values + offsets (`cu_seqlens`); padding it to `[B, L]` adds a mask.
# - Megatron's SP scatter needs `S % tp == 0` and asserts otherwise. verl 0.9.0's `build_vlm_attn_mask_thd`
#   padded to the longest length (9 here: the mock scatter fails); 0.9.1's pads to the alignment (10: it
#   passes), and no longer skips the mask on NPU. The PR's "4026 tokens, TP=2" is inconsistent as written: 4026 is even.
# - Zigzag CP (`2*cp` chunks, rank r gets r and `2*cp-1-r`) balances causal work exactly; with it the
#   length must divide by `tp*cp*2` (upstream's rule; the least is `lcm(2cp, tp*cp)`).
# - In verl's THD path only the VLM ids take the `[B, L]` shape; labels are packed per sequence by
#   `preprocess_thd_engine` (4.1: align each sequence, then add), outputs unpacked by
#   `postprocess_thd_engine`. Labels meet the ids' length in BSHD, via `forced_max_seqlen`; a later
#   length bug (#7948) was a bucketed THD length against the unpadded dense one.
# - Test the layout, not just the shapes: a split that holds every row once can still be wrong (4.2),
#   and a padding guard needs an unaligned longest length and a case with CP (4.3).

# %% [markdown]
# ## Open questions
# - Padding each sequence to a multiple of TP x 2CP spends tokens on nothing. At what sequence lengths does that
#   waste matter, and what would a packer do about it?
# - The crash needed the longest sequence to be unaligned. Which test inputs would you generate so such a corner
#   cannot hide behind typical lengths?
# - FP8 padding and length buckets change the packed length again. Where should one function own all of these
#   rules, so the engine and its tests cannot disagree?

# %% [markdown]
# ## Sources
# Facts checked against verl 0.9.1 (installed) and 0.9.0 (`.venv/verl-releases/0.9.0`). Paths inside verl:
# - `verl/models/mcore/util.py::build_vlm_attn_mask_thd`: jagged `input_ids` -> padded ids and a bool mask; 0.9.0
#   pads to the longest length and returns no mask on NPU, 0.9.1 pads up to `tp*cp*2 if cp > 1 else tp` like its
#   sibling `build_vlm_attn_mask_bshd` (which still returns None on NPU).
# - Same file: `preprocess_thd_engine` packs nested tensors into one THD row (aligned per sequence; `cp_layout`
#   `"zigzag"` by default, `"contiguous"` aligns to `tp*cp`), `postprocess_thd_engine` unpacks;
#   `preprocess_bshd_engine` pads labels to `forced_max_seqlen` when given.
# - `verl/models/mcore/model_forward.py::gptmodel_forward_model_engine` and
#   `verl/models/mcore/model_forward_fused.py::fused_forward_model_engine`: both call
#   `build_vlm_attn_mask_thd(input_ids, pad_token_id)` in 0.9.1 (in 0.9.0 the fused one padded the ids itself).
# - Megatron-LM `megatron/core/tensor_parallel/mappings.py`: `scatter_to_sequence_parallel_region` ->
#   `_split_along_first_dim`, which asserts "First dimension of the tensor should be divisible by tensor parallel
#   size".
# - PRs: #7702 (the fix), #7372 (the NPU mask, also first released in 0.9.1), #7358 (`pad_to_length_bucket`)
#   and #7948 (the bucketed THD length against the dense conversion).
#
# The padding, splits, pictures and toy model are the course's own (`verlstudy.lessons.l04_thd`); the cells marked
# "upstream" run verl's own functions from its source with stand-ins for Megatron (`upstream.py`).

# %%
claims_table()
