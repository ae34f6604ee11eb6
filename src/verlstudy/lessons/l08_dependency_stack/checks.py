"""Exercise checkers and reference answers for lesson 08.

A wrong answer's message names the mistake; how to get there is each checker's `method`, shown after
repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from verlstudy.common.pins import parse_pins
from verlstudy.common.refs import ref_naming_problem
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l08_dependency_stack.manifests import StackManifest, manifest_pins

# ---------------------------------------------------------------- exercise checkers

FIX_REF_CASES: tuple[tuple[str, str, str], ...] = (
    ("https://github.com/NVIDIA/Megatron-LM.git", "core_r0.18.0", "core_v0.18.0"),
    ("Ascend/MindSpeed", "core_v0.18.0", "core_r0.18.0"),
    ("Ascend/MegatronAdaptor", "core_v0.16.0", "core_r0.16.0"),
    ("Ascend/MindSpeed", "core_r0.18.0", "core_r0.18.0"),
    # swapping does not help here: core_r0.18.0rc1 still breaks MindSpeed's scheme, core_v0.18 Megatron-LM's
    ("Ascend/MindSpeed", "core_v0.18.0rc1", "core_v0.18.0rc1"),
    ("NVIDIA/Megatron-LM", "core_r0.18", "core_r0.18"),
    ("NVIDIA/Megatron-LM", "core_v0.16.0", "core_v0.16.0"),
    ("vllm-project/vllm", "releases/v0.23.0", "releases/v0.23.0"),
    ("NVIDIA/Megatron-LM", "ba7b5ebce12af60627a80985792a1449ce45f46c", "ba7b5ebce12af60627a80985792a1449ce45f46c"),
)


@checker(
    "8.1",
    method=(
        "if ref_naming_problem(repo, ref) is None, return ref; otherwise build the swapped ref (core_r -> core_v "
        "or core_v -> core_r at its start) and return it only if ref_naming_problem(repo, swapped) is None, "
        "else return ref unchanged"
    ),
    reveals=["did you mean 'core_r0.18.0'?", "prefer the tag 'core_v0.18.0'"],
)
def check_fix_ref(fn: Callable[[str, str], str]) -> str:
    """Exercise 8.1: fix_ref(repo, ref) swaps core_r/core_v only where the repo's scheme asks for it."""
    for repo, ref, want in FIX_REF_CASES:
        got = fn(repo, ref)
        if got != want:
            if ref == want and ref_naming_problem(repo, ref) is not None:
                hint = "the swapped ref still breaks the scheme, so a swap does not fix it"
            elif ref == want:
                hint = "this ref already fits (or the repo has no scheme, or it is a commit): return it unchanged"
            else:
                hint = f"this ref breaks {repo}'s naming scheme: swap r and v"
            raise ExerciseFailure(f"fix_ref({repo!r}, {ref!r}) returned {got!r}, expected {want!r}: {hint}")
    return f"{len(FIX_REF_CASES)} refs"


@checker(
    "8.2",
    method=(
        "for each component c of manifest.components write f\"{c.repo[len('pypi:'):]}=={c.ref}\" when c.is_pypi, "
        "else f\"git+{c.repo}@{c.ref}\"; join them with spaces after 'pip install '"
    ),
    reveals=["git+{c.repo}@{c.ref}", "=={c.ref}"],
)
def check_pip_line(fn: Callable[[StackManifest], str], manifests: Sequence[StackManifest]) -> str:
    """Exercise 8.2: pip_line(manifest) is one `pip install` command pinning every component of it."""
    if not manifests:
        raise ValueError("check_pip_line needs at least one manifest to test against")
    for m in manifests:
        text = fn(m)
        if not isinstance(text, str) or not text.strip().startswith("pip install"):
            raise ExerciseFailure(f"return one shell command starting with 'pip install', got {text!r}")
        try:
            got = {(p.repo, p.ref) for p in parse_pins(text, "shell", "pip_line")}
        except ValueError as e:
            raise ExerciseFailure(f"the command does not parse as shell: {e}") from e
        want = manifest_pins(m)
        missing = sorted(want - got)
        extra = sorted(got - want)
        if missing:
            repo, ref = missing[0]
            form = f"{repo[5:]}=={ref}" if repo.startswith("pypi:") else "git+<repo URL>@<ref>"
            raise ExerciseFailure(f"{m.name}: {repo} at {ref} is not pinned ({len(missing)} missing), as {form}")
        if extra:
            raise ExerciseFailure(f"{m.name}: pins not in the manifest: {extra}")
    return f"{len(manifests)} manifests round-trip"
