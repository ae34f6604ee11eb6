"""Exercises 4.2 and 4.3's guard cases: serves `checks.py` only (nothing else imports it).

A guard is handed right and wrong implementations (`GOOD_SPLITS`/`BUGGY_SPLITS` for 4.2's CP split,
`GOOD_PADS`/`BUGGY_PADS` for 4.3's padding). `WatchedGuard` calls the learner's guard and records what each
call did (what it returned or printed, how many rows it handed the split), so that when a wrong implementation
gets through (check_guard's `GuardLetThrough` says which, and on which calls), the message can name what the
guard did wrong where it is recognised: it returned False or printed instead of raising, or it never tested the
seq_len it was given.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.lessons.l04_thd.thd import aligned_length, pad_nested, pad_nested_unaligned, zigzag_split

# ---------------------------------------------------------------- 4.2 the CP splits a guard is handed

SplitFn = Callable[[torch.Tensor, int, int], torch.Tensor]


def _split_contiguous(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    return x.chunk(cp)[rank]


def _split_one_from_each_half(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[cp + rank]]) if cp > 1 else x


def _split_swapped(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[2 * cp - 1 - rank], chunks[rank]]) if cp > 1 else x


def _split_mirror_off_by_one(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[(2 * cp - 2 - rank) % (2 * cp)]]) if cp > 1 else x


def _split_last_rank_wrong(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    right = zigzag_split(x, cp, rank)
    return right.flip(0) if cp > 1 and rank == cp - 1 else right


def _split_middle_rank_wrong(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    right = zigzag_split(x, cp, rank)
    return right.roll(1) if 0 < rank < cp - 1 else right


def _split_rows_reversed_in_chunks(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    if cp == 1:
        return x
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[rank].flip(0), chunks[2 * cp - 1 - rank].flip(0)])


def _split_ignores_cp_2(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    return zigzag_split(x, cp, rank) if cp == 2 else x.chunk(cp)[rank]


def _split_drops_rows_without_cp(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    return zigzag_split(x, cp, rank) if cp > 1 else x[: x.shape[0] // 2]


def _split_two_row_chunks(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    """Zigzag with the chunk length fixed at 2 rows: right only when the sequence has 4*cp rows."""
    if cp == 1:
        return x
    mirror = 2 * cp - 1 - rank
    return torch.cat([x[2 * rank : 2 * rank + 2], x[2 * mirror : 2 * mirror + 2]])


def _split_zigzag_by_hand(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    """A right split written another way: index the rows of chunks r and 2*cp-1-r."""
    if cp == 1:
        return x
    chunk = x.shape[0] // (2 * cp)
    rows = [*range(rank * chunk, (rank + 1) * chunk), *range((2 * cp - 1 - rank) * chunk, (2 * cp - rank) * chunk)]
    return x[torch.tensor(rows, dtype=torch.long)]


BUGGY_SPLITS: tuple[tuple[SplitFn, str], ...] = (
    (_split_contiguous, "the contiguous split (rank r holds block r): every row once, but unbalanced"),
    (_split_one_from_each_half, "a split giving rank r chunks r and cp+r: every row once, not the zigzag pairing"),
    (_split_swapped, "a split holding the right chunks in the wrong order"),
    (_split_mirror_off_by_one, "a split pairing chunk r with 2*cp-2-r: rows duplicated and missing"),
    (_split_last_rank_wrong, "a split that is right on every rank but the last"),
    (_split_middle_rank_wrong, "a split that is right on the first and last ranks only"),
    (_split_rows_reversed_in_chunks, "a split with the right chunks whose rows are out of place inside them"),
    (_split_ignores_cp_2, "a split that is zigzag only when cp == 2"),
    (_split_drops_rows_without_cp, "a split that is right for cp > 1 but drops half the rows when cp == 1"),
    (_split_two_row_chunks, "a split whose chunks are always 2 rows long, right only when seq_len is 4*cp"),
)
GOOD_SPLITS: tuple[tuple[SplitFn, str], ...] = (
    (zigzag_split, "the zigzag split"),
    (_split_zigzag_by_hand, "the zigzag split written by row index"),
)
SPLIT_CASES: tuple[tuple[int, int], ...] = ((8, 2), (24, 3), (16, 4), (12, 1), (32, 4), (6, 3))

# ---------------------------------------------------------------- 4.3 the paddings a guard is handed

PadFn = Callable[[torch.Tensor, int, int, int], tuple[torch.Tensor, torch.Tensor]]


def _pad_to(input_ids: torch.Tensor, pad_id: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = input_ids.offsets().diff()
    rows = [torch.cat([s, s.new_full((max(length - len(s), 0),), pad_id)])[:length] for s in input_ids.unbind()]
    padded = torch.stack(rows)
    return padded, torch.arange(length)[None, :] < lengths[:, None]


def _pad_tp_only(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _pad_to(ids, pad_id, aligned_length(int(ids.offsets().diff().max()), tp, 1))


def _pad_tp_times_cp(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _pad_to(ids, pad_id, aligned_length(int(ids.offsets().diff().max()), tp * cp, 1))


def _pad_mask_all_true(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    padded, mask = pad_nested(ids, pad_id, tp, cp)
    return padded, torch.ones_like(mask)


def _pad_rounds_down(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    longest = int(ids.offsets().diff().max())
    align = aligned_length(1, tp, cp)
    return _pad_to(ids, pad_id, max(longest - longest % align, align))


def _pad_first_length(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right on one-sequence batches: aligns the first sequence's length, not the longest."""
    return _pad_to(ids, pad_id, aligned_length(int(ids.offsets().diff()[0]), tp, cp))


def _pad_shuffles_tokens(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligned, with the right mask, but each sequence's tokens written back to front."""
    padded, mask = pad_nested(ids, pad_id, tp, cp)
    for row, seq in enumerate(ids.unbind()):
        padded[row, : len(seq)] = seq.flip(0)
    return padded, mask


def _pad_later_rows_shifted(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligned and masked right, the first row right, later rows read from one token too early."""
    padded, mask = pad_nested(ids, pad_id, tp, cp)
    values, offsets = ids.values(), ids.offsets()
    for row in range(1, len(offsets) - 1):
        n = int(offsets[row + 1] - offsets[row])
        padded[row, :n] = values[int(offsets[row]) - 1 : int(offsets[row]) - 1 + n]
    return padded, mask


def _pad_left(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligned and masked, but the tokens pushed to the end of each row (the pads in front)."""
    padded, mask = pad_nested(ids, pad_id, tp, cp)
    return padded.flip(1), mask


def _pad_odd_tp_fails(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligns to tp rounded down to a power of two (right for tp = 1, 2, 4, 8 only)."""
    power = 1 << (tp.bit_length() - 1)
    return pad_nested(ids, pad_id, power, cp)


def _pad_one_more_block(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A right padding written another way: always one alignment block more than needed."""
    longest = int(ids.offsets().diff().max())
    return _pad_to(ids, pad_id, aligned_length(longest, tp, cp) + aligned_length(1, tp, cp))


BUGGY_PADS: tuple[tuple[PadFn, str], ...] = (
    (pad_nested_unaligned, "the pre-#7702 padding (to the longest sequence, no alignment)"),
    (_pad_tp_only, "a padding that aligns to tp and ignores cp"),
    (_pad_tp_times_cp, "a padding that aligns to tp*cp, without the factor 2 of the zigzag chunks"),
    (_pad_mask_all_true, "a padding whose mask marks the padded positions as real"),
    (_pad_rounds_down, "a padding that rounds the longest length down and drops real tokens"),
    (_pad_first_length, "a padding that aligns the first sequence's length, right only on one-sequence batches"),
    (_pad_shuffles_tokens, "a padding that is aligned and masked right but moves the real tokens"),
    (_pad_left, "a padding that puts the pads in front of the tokens"),
    (_pad_later_rows_shifted, "a padding whose first row is right but whose later rows hold their neighbours' tokens"),
    (_pad_odd_tp_fails, "a padding that is right for tp = 1, 2, 4, 8 and wrong for an odd tp"),
)
GOOD_PADS: tuple[tuple[PadFn, str], ...] = (
    (pad_nested, "the aligned padding of verl 0.9.1"),
    (_pad_one_more_block, "a padding one alignment block longer than needed (still safe)"),
)


# ---------------------------------------------------------------- the learner's guard, watched


class GuardProblem(BaseException):
    """What the guard did wrong, carried past check_guard's verdicts (which read any AssertionError, even
    ExerciseFailure, as the guard failing an implementation)."""


@dataclass
class _GuardCall:
    """One call of the learner's guard: the implementation handed to it, the other arguments, what it did."""

    impl: Callable[..., object]
    args: tuple[object, ...]
    rows: list[int] = field(default_factory=list)  # 4.2: how many rows each call of the split was handed
    split_errors: list[tuple[BaseException, int]] = field(default_factory=list)  # 4.2: the split's errors, rows
    raised: bool = False
    returned: object = None
    printed: str = ""


class _Tee(io.StringIO):
    """Keeps what the guard prints and still shows it (a print of the learner's is theirs to see)."""

    def __init__(self, target: object) -> None:
        super().__init__()
        self.target = target

    def write(self, text: str) -> int:
        self.target.write(text)  # type: ignore[attr-defined]
        return super().write(text)


Implementations = Sequence[tuple[Callable[..., object], str]]


class WatchedGuard:
    """Calls the learner's guard as check_guard asks and records each call (`_GuardCall`).

    `good` are the right implementations check_guard hands it (what the guard does on them is its habit, not a
    sign of a wrong one); `impl_name` is how a message writes the implementation argument ("pad_fn").
    """

    def __init__(self, guard: Callable[..., object], *, good: Implementations, impl_name: str) -> None:
        if not callable(guard):
            raise ExerciseFailure(f"the answer should be a function, got {type(guard).__name__}")
        self.guard, self.good, self.impl_name = guard, tuple(good), impl_name
        self.calls: list[_GuardCall] = []

    def __call__(self, impl: Callable[..., object], *args: object) -> None:
        call = _GuardCall(impl, args)
        self.calls.append(call)
        out = _Tee(sys.stdout)
        try:
            with contextlib.redirect_stdout(out):
                call.returned = self.guard(self.handed(impl, call), *args)
        except BaseException:
            call.raised = True
            raise
        finally:
            call.printed = out.getvalue()

    def handed(self, impl: Callable[..., object], call: _GuardCall) -> Callable[..., object]:
        """What the guard is given in place of `impl` (a subclass watches it)."""
        return impl

    def describe(self, call: _GuardCall) -> str:
        return "guard(" + ", ".join([self.impl_name, *map(repr, call.args)]) + ")"

    def passed_calls(self, impl: Callable[..., object], passed: Sequence[tuple[object, ...]]) -> list[_GuardCall]:
        """The recorded calls of the guard on `impl` among `passed` (check_guard's argument tuples), in call order."""
        return [c for c in self.calls if c.impl is impl and not c.raised and (impl, *c.args) in passed]

    def why_let_through(self, impl: Callable[..., object], passed: Sequence[tuple[object, ...]]) -> str | None:
        """What the guard did wrong on the calls it passed the wrong `impl` on (None: nothing recognised)."""
        on_good = [c for c in self.calls if any(c.impl is right for right, _ in self.good)]
        for call in self.passed_calls(impl, passed):
            # only what the guard did differently from its calls on the right implementations: a signal, not a habit
            printed = call.printed.strip() and not any(c.printed.strip() for c in on_good)
            returned = call.returned is not None and all(repr(c.returned) != repr(call.returned) for c in on_good)
            if printed or returned:
                did = [f"printed {_first_line(call.printed)!r}"] * bool(printed)
                did += [f"returned {call.returned!r}"] * bool(returned)
                return (
                    f"on {self.describe(call)} your guard {' and '.join(did)} instead of raising: a guard fails "
                    "only by raising (an assert); a print or a returned value goes unnoticed"
                )
        return None


class SplitGuardRun(WatchedGuard):
    """4.2's guard, handed a watched split: a bare AssertionError, the split's own error on rows the guard chose,
    and a guard that never splits the seq_len rows it was given are named."""

    def handed(self, impl: Callable[..., object], call: _GuardCall) -> Callable[..., object]:
        def watched(rows: torch.Tensor, cp_: int, rank: int) -> object:
            try:
                count = len(rows)
            except TypeError:
                count = -1
            call.rows.append(count)
            try:
                return impl(rows, cp_, rank)
            except Exception as e:
                call.split_errors.append((e, count))
                raise

        return watched

    def __call__(self, impl: Callable[..., object], *args: object) -> None:
        seq_len, cp = args
        try:
            super().__call__(impl, *args)
        except AssertionError as e:
            if not str(e).strip() and all(impl is not right for right, _ in self.good):
                raise GuardProblem(
                    f"your guard failed with a bare AssertionError on {self.describe(self.calls[-1])}: give the "
                    "assertion a message that says which rank holds what (the exercise asks for one)"
                ) from None
            raise
        except Exception as e:
            for err, rows in self.calls[-1].split_errors:
                if err is e and rows != seq_len:
                    raise GuardProblem(
                        f"the split function raised {type(e).__name__} when your guard called it on {rows} rows "
                        f"with cp={cp}, but the guard was given seq_len={seq_len}: split the rows you are given "
                        f"({type(e).__name__}: {e})"
                    ) from None
            raise

    def why_let_through(self, impl: Callable[..., object], passed: Sequence[tuple[object, ...]]) -> str | None:
        why = super().why_let_through(impl, passed)
        if why is not None:
            return why
        for call in self.passed_calls(impl, passed):
            seq_len, cp = call.args
            if not _split_wrong_at(impl, seq_len, cp):
                continue  # nothing to catch on this call: what the guard did here is not why the split got through
            if not call.rows:
                return f"on {self.describe(call)} your guard never called {self.impl_name}"
            if seq_len not in call.rows:
                counts = sorted(set(call.rows))
                shown = counts[0] if len(counts) == 1 else counts
                return (
                    f"on {self.describe(call)} your guard split {shown} rows, not the {seq_len} it was given: "
                    "test the length you are given"
                )
        return None


def _split_wrong_at(split: Callable[..., object], seq_len: int, cp: int) -> bool:
    """Whether `split` gives some rank other rows than zigzag does, for seq_len rows at this cp."""
    rows = torch.arange(seq_len)
    try:
        return any(not torch.equal(split(rows, cp, r), zigzag_split(rows, cp, r)) for r in range(cp))
    except Exception:
        return True


def _first_line(text: str, limit: int = 80) -> str:
    line = next((s for s in text.strip().splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."
