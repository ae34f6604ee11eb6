"""Lesson 09's generated flat config and its golden check (the `git diff --exit-code` habit).

`generate_flat_config` is the analogue of verl's scripts/generate_trainer_config.sh; `check_generated`
regenerates and compares, failing with a unified diff when the committed file is stale.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from verlstudy.kit.params import check_path
from verlstudy.lessons.l09_dead_config.errors import ConfigError, StaleGeneratedConfigError
from verlstudy.lessons.l09_dead_config.loading import compose
from verlstudy.lessons.l09_dead_config.schema import dump_yaml

GENERATED_HEADER = (
    "# This file is generated from {root} by verlstudy.lessons.l09_dead_config.golden.generate_flat_config\n"
    "# (the analogue of verl's scripts/generate_trainer_config.sh). Do not modify it directly:\n"
    "# edit the source YAML, regenerate, and commit both.\n"
)


def generate_flat_config(root: str | Path) -> str:
    """The composed config as one flat YAML text with a 'generated, do not edit' header.
    Deterministic: keys keep composition order, so the same sources always give the same bytes."""
    root = check_path("root", root, what="the root YAML file's path (str or Path)")
    return GENERATED_HEADER.format(root=root.name) + "\n" + dump_yaml(compose(root).data)


def write_generated(root: str | Path, out: str | Path) -> Path:
    """Regenerate the flat config and write it to `out` (what the generate script does)."""
    out = check_path("out", out, what="the file to write (str or Path)")
    out.write_text(generate_flat_config(root), encoding="utf-8")
    return out


def generated_diff(generated: str | Path, root: str | Path, *, context: int = 2) -> str:
    """The unified diff from the committed `generated` file to a fresh regeneration from `root`
    ('' when they agree); file labels are `a/<name>` and `b/<name>`, never full paths."""
    generated = check_path("generated", generated, what="the generated file's path (str or Path)")
    root = check_path("root", root, what="the root YAML file's path (str or Path)")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ValueError(f"context must be a non-negative int (lines around each change), got {context!r}")
    if not generated.is_file():
        raise ConfigError(f"generated config {generated.name!r} does not exist: run write_generated first")
    fresh = generate_flat_config(root).splitlines(keepends=True)
    stored = generated.read_text(encoding="utf-8").splitlines(keepends=True)
    diff = difflib.unified_diff(stored, fresh, f"a/{generated.name}", f"b/{generated.name}", n=context)
    return "".join(diff).rstrip("\n")


def check_generated(generated: str | Path, root: str | Path, *, context: int = 2) -> None:
    """Regenerate from `root` and compare with the committed `generated` file, like the pre-commit
    hook's `git diff --exit-code`: StaleGeneratedConfigError with a unified diff when they differ."""
    diff = generated_diff(generated, root, context=context)
    if diff:
        raise StaleGeneratedConfigError(
            f"{Path(generated).name} is stale: it differs from a fresh regeneration of {Path(root).name}; "
            f"regenerate it and commit the result.\n{diff}",
            diff,
        )
