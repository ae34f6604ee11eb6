"""Exercises 4.2 and 4.3's guard cases: serves `checks.py` only (nothing else imports it).

A guard is handed right implementations written several ways (`GOOD_SPLITS`, `GOOD_PADS`) and a generated family of
wrong ones, mutants of the reference (`BAD_SPLITS` from `split_mutants.py`, `BAD_PADS` from `pad_mutants.py`).
`WatchedGuard` calls the learner's guard and records what each call did (what it returned or printed, how many rows it
handed the split), so that when a wrong implementation gets through (check_guard's `GuardLetThrough` says which, and
on which calls), the message can name what the guard did wrong where it is recognised: it returned False or printed
instead of raising, it never tested the seq_len it was given, it never looked at each rank's own rows or their order,
its cases never show the mistake, or it did not look at the part of the padding that is wrong.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

import torch

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.lessons.l04_thd.pad_mutants import PadFn, aligned_padding, pad_mutants, unsafe_part, upstream_align
from verlstudy.lessons.l04_thd.split_mutants import (
    SplitFn,
    how_wrong,
    rank_rows,
    split_mutants,
    wrong_at,
    zigzag_rows,
    zigzag_table,
)

# ---------------------------------------------------------------- the right implementations a guard must pass


def _split_zigzag_by_hand(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    """A right split written another way: index the rows of chunks r and 2*cp-1-r."""
    if cp == 1:
        return x
    chunk = x.shape[0] // (2 * cp)
    rows = [*range(rank * chunk, (rank + 1) * chunk), *range((2 * cp - 1 - rank) * chunk, (2 * cp - rank) * chunk)]
    return x[torch.tensor(rows, dtype=torch.long)]


def _split_by_reshape(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    """A right split written another way: the rows as a (2*cp, chunk) grid, two of its rows taken."""
    grid = x.reshape(2 * cp, -1) if cp > 1 else x[None]
    return grid[[rank, 2 * cp - 1 - rank] if cp > 1 else [0]].reshape(-1)


def _pad_like_upstream(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """0.9.1's build_vlm_attn_mask_thd, written here (the course's pad_nested refuses to run for a learner's guard)."""
    lengths = ids.offsets().diff()
    block = upstream_align(tp, cp)
    length = -(-int(lengths.max()) // block) * block
    padded = ids.to_padded_tensor(pad_id, output_size=(len(lengths), length))
    return padded, torch.arange(length)[None, :] < lengths[:, None]


GOOD_SPLITS: tuple[tuple[SplitFn, str], ...] = (
    (zigzag_rows, "the zigzag split"),
    (_split_zigzag_by_hand, "the zigzag split written by row index"),
    (_split_by_reshape, "the zigzag split written as a reshape"),
)
GOOD_PADS: tuple[tuple[PadFn, str], ...] = (
    (_pad_like_upstream, "the aligned padding of verl 0.9.1"),
    (aligned_padding(), "the aligned padding written on the batch's values and offsets"),
    (aligned_padding(extra=1), "a padding one alignment block longer than needed (still safe)"),
)
BAD_SPLITS: tuple[tuple[SplitFn, str], ...] = tuple((m.split, m.what) for m in split_mutants())
BAD_PADS: tuple[tuple[PadFn, str], ...] = tuple((m.pad, m.what) for m in pad_mutants())


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
    asked: list[tuple[int, object, object]] = field(default_factory=list)  # 4.2: (rows, cp, rank) of each split
    split_errors: list[tuple[BaseException, int]] = field(default_factory=list)  # the impl's errors, rows handed
    tried: list[tuple[torch.Tensor, int, int]] = field(default_factory=list)  # 4.3: (ids, tp, cp) of each padding
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
            raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(guard).__name__))
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
                return i18n.pick(
                    _DID_INSTEAD[bool(printed), bool(returned)],
                    call=self.describe(call),
                    printed=repr(_first_line(call.printed)),
                    returned=repr(call.returned),
                )
        return None


def raise_as_failed(call: _GuardCall, error: Exception) -> NoReturn:
    """Re-raise the guard's `error`; as a failure (AssertionError) when it is the implementation's own error that
    the guard let propagate: a test that errors has failed, so a guard that calls a broken implementation and lets
    its exception out did its job (the exception is not the guard's own bug)."""
    if any(err is error for err, _ in call.split_errors):
        raise AssertionError(
            i18n.pick("the implementation raised {error}: {detail}", error=type(error).__name__, detail=error)
        ) from error
    raise error


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
            call.asked.append((count, cp_, rank))
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
                    i18n.pick(
                        "your guard failed with a bare AssertionError on {call}: give the assertion a message that "
                        "says which rank holds what (the exercise asks for one)",
                        call=self.describe(self.calls[-1]),
                    )
                ) from None
            raise
        except Exception as e:
            for err, rows in self.calls[-1].split_errors:
                if err is e and rows != seq_len:
                    raise GuardProblem(
                        i18n.pick(
                            "the split function raised {error} when your guard called it on {rows} rows with cp={cp}, "
                            "but the guard was given seq_len={seq_len}: split the rows you are given ({error}: "
                            "{detail})",
                            error=type(e).__name__,
                            rows=rows,
                            cp=cp,
                            seq_len=seq_len,
                            detail=e,
                        )
                    ) from None
            raise_as_failed(self.calls[-1], e)

    def why_let_through(self, impl: Callable[..., object], passed: Sequence[tuple[object, ...]]) -> str | None:
        why = super().why_let_through(impl, passed)
        if why is not None:
            return why
        for call in self.passed_calls(impl, passed):
            seq_len, cp = call.args
            if not wrong_at(impl, seq_len, cp):
                continue  # nothing to catch on this call: what the guard did here is not why the split got through
            if not call.rows:
                return i18n.pick(
                    "on {call} your guard never called {impl}", call=self.describe(call), impl=self.impl_name
                )
            if seq_len not in call.rows:
                counts = sorted(set(call.rows))
                shown = counts[0] if len(counts) == 1 else counts
                return i18n.pick(
                    "on {call} your guard split {shown} rows, not the {seq_len} it was given: test the length you "
                    "are given",
                    call=self.describe(call),
                    shown=shown,
                    seq_len=seq_len,
                )
            asked = [(c, r) for n, c, r in call.asked if n == seq_len]
            if all(c != cp for c, _ in asked):
                cps = sorted({repr(c) for c, _ in asked})
                return i18n.pick(
                    "on {call} your guard split with cp={cps}, not the cp={cp} it was given: test the cp you are given",
                    call=self.describe(call),
                    cps=", ".join(cps),
                    cp=cp,
                )
            unseen = _ranks_not_asked(impl, seq_len, cp, {r for c, r in asked if c == cp})
            if unseen is not None:
                return i18n.pick("on {call} {why}", call=self.describe(call), why=unseen)
            return i18n.pick("on {call} {why}", call=self.describe(call), why=how_wrong(impl, seq_len, cp))
        return None


def _ranks_not_asked(impl: Callable[..., object], seq_len: int, cp: int, ranks: set[object]) -> str | None:
    """When the guard never asked the split for a rank that is wrong there: which ranks it looked at (else None)."""
    held = rank_rows(impl, seq_len, cp)
    want = zigzag_table(seq_len, cp)
    if held is None:
        return None
    wrong = [r for r in range(cp) if tuple(held[r]) != want[r]]
    if any(r in ranks for r in wrong):
        return None  # it looked at a wrong rank: what it compared there is the mistake
    looked = sorted(r for r in ranks if isinstance(r, int))
    if looked == [0, cp - 1] and cp > 2:
        template = (
            "your guard looked at the first and last ranks only, and rank(s) {wrong} are wrong there: check every rank"
        )
    elif len(looked) == 1:
        template = "your guard looked at rank {rank} only, and rank(s) {wrong} are wrong there: check every rank"
    elif looked:
        template = "your guard looked at ranks {looked} only, and rank(s) {wrong} are wrong there: check every rank"
    else:
        template = "your guard looked at no rank at all, and rank(s) {wrong} are wrong there: check every rank"
    return i18n.pick(template, wrong=wrong, rank=looked[0] if looked else None, looked=looked)


# a guard that signalled instead of raising, by (it printed, it returned a value): one whole sentence each
_DID_INSTEAD = {
    (True, False): "on {call} your guard printed {printed} instead of raising: a guard fails only by raising (an "
    "assert); a print or a returned value goes unnoticed",
    (False, True): "on {call} your guard returned {returned} instead of raising: a guard fails only by raising (an "
    "assert); a print or a returned value goes unnoticed",
    (True, True): "on {call} your guard printed {printed} and returned {returned} instead of raising: a guard fails "
    "only by raising (an assert); a print or a returned value goes unnoticed",
}


class PadGuardRun(WatchedGuard):
    """4.3's guard, handed a watched padding: the batches and sizes the guard tries are recorded, so a padding let
    through is named by what the guard's cases never showed or by the part of the output it did not look at."""

    def handed(self, impl: Callable[..., object], call: _GuardCall) -> Callable[..., object]:
        def watched(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> object:
            call.tried.append((ids, tp, cp))
            try:
                return impl(ids, pad_id, tp, cp)
            except Exception as e:
                call.split_errors.append((e, -1))
                raise

        return watched

    def __call__(self, impl: Callable[..., object], *args: object) -> None:
        try:
            super().__call__(impl, *args)
        except AssertionError:
            raise
        except Exception as e:
            raise_as_failed(self.calls[-1], e)

    def why_let_through(self, impl: Callable[..., object], passed: Sequence[tuple[object, ...]]) -> str | None:
        why = super().why_let_through(impl, passed)
        if why is not None:
            return why
        tried = [case for call in self.passed_calls(impl, passed) for case in call.tried]
        if not tried:
            return i18n.pick("your guard never called {impl}", impl=self.impl_name)
        for ids, tp, cp in tried:
            try:
                part = unsafe_part(impl, ids, tp, cp)
                shown = ids.offsets().diff().tolist()
            except Exception:  # the guard handed something that is not a jagged batch: nothing to name
                continue
            if part is not None:
                return i18n.pick(
                    "on your batch of lengths {shown} at tp={tp}, cp={cp} {part} is wrong and your guard did not "
                    "notice: look at it",
                    shown=shown,
                    tp=tp,
                    cp=cp,
                    part=i18n._(part),  # pad_mutants' words for a part of the output, translated in l04.po
                )
        missing = _missing_kinds(tried)
        if missing:
            return i18n.pick(
                "none of the batches and sizes your guard tries shows this mistake (none of them has {missing}): "
                "choose cases that do",
                missing=", ".join(i18n._(kind) for kind in missing),
            )
        return i18n._("none of the batches and sizes your guard tries shows this mistake: choose cases that do")


def _missing_kinds(tried: Sequence[tuple[torch.Tensor, int, int]]) -> list[str]:
    """The kinds of case a padding guard needs that none of its tried cases is."""
    cases = []
    for ids, tp, cp in tried:
        try:
            cases.append((ids.offsets().diff().tolist(), tp, cp))
        except Exception:
            continue
    kinds = {
        "cp > 1": lambda ls, tp, cp: cp > 1,
        "tp and cp both above 1": lambda ls, tp, cp: tp > 1 and cp > 1,
        "an odd tp above 1": lambda ls, tp, cp: tp > 1 and tp % 2 == 1,
        "several sequences": lambda ls, tp, cp: len(ls) > 1,
        "a longest sequence off the alignment": lambda ls, tp, cp: max(ls) % upstream_align(tp, cp) != 0,
        "a longest sequence that is not the first": lambda ls, tp, cp: max(ls) != ls[0],
    }
    return [kind for kind, shows in kinds.items() if not any(shows(*case) for case in cases)]


def _first_line(text: str, limit: int = 80) -> str:
    line = next((s for s in text.strip().splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."
