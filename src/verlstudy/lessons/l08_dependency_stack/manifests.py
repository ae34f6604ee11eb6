"""Stack manifests (lesson 08): one file that lists every pin, a diff of two, every file rendered from one."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verlstudy.common.pins import pins_in_files, ref_findings
from verlstudy.common.refs import COMMIT_HASH, REF_KINDS, Pin, ref_finding, repo_key
from verlstudy.kit.params import check_path
from verlstudy.kit.tables import Table
from verlstudy.lessons.l08_dependency_stack.real_files import component_drift

# ---------------------------------------------------------------- stack manifests

# "unpinned": a `git clone` with no --branch and no checkout (the default branch, whatever it holds at build time)
UNPINNED = "unpinned"
KINDS: tuple[str, ...] = (*REF_KINDS, UNPINNED)


@dataclass(frozen=True)
class Component:
    """One dependency of a stack: a git repository at a tag/branch/commit, or a PyPI package version."""

    name: str
    repo: str  # git URL, or "pypi:<name>"
    kind: str  # tag | branch | commit | version | unpinned
    ref: str  # "" when unpinned

    @property
    def key(self) -> str:
        return repo_key(self.repo)

    @property
    def is_pypi(self) -> bool:
        return self.key.startswith("pypi:")


@dataclass(frozen=True)
class StackManifest:
    name: str
    components: tuple[Component, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)

    def component(self, name: str) -> Component:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(f"no component {name!r} in {self.name!r}; have {', '.join(c.name for c in self.components)}")


def _component(raw: object, where: str) -> Component:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: each [[component]] must be a table with name, repo, kind, ref")
    required = ("name", "repo", "kind") if raw.get("kind") == UNPINNED else ("name", "repo", "kind", "ref")
    missing = [k for k in required if not isinstance(raw.get(k), str) or not raw.get(k)]
    if missing:
        raise ValueError(f"{where}: component {raw.get('name', '?')!r} lacks string field(s) {', '.join(missing)}")
    extra = sorted(set(raw) - {"name", "repo", "kind", "ref", "note"})
    if extra:
        raise ValueError(f"{where}: component {raw['name']!r} has unknown field(s) {', '.join(extra)}")
    comp = Component(raw["name"], raw["repo"], raw["kind"], raw.get("ref", ""))
    if comp.kind not in KINDS:
        raise ValueError(f"{where}: component {comp.name!r} kind={comp.kind!r}; allowed: {', '.join(KINDS)}")
    if comp.kind == UNPINNED and (comp.ref or comp.is_pypi):
        raise ValueError(f"{where}: component {comp.name!r}: an unpinned git clone has no ref (and is not pypi:)")
    if comp.is_pypi != (comp.kind == "version"):
        raise ValueError(f"{where}: component {comp.name!r}: kind 'version' goes with repo 'pypi:<name>' and only then")
    if comp.kind == "commit" and not COMMIT_HASH.fullmatch(comp.ref):
        raise ValueError(f"{where}: component {comp.name!r}: a commit ref must be 7-40 hex digits, got {comp.ref!r}")
    return comp


def parse_manifest(text: str, where: str = "<manifest>") -> StackManifest:
    """A stack manifest from TOML text: `name`, optional `[settings]`, and `[[component]]` tables."""
    if not isinstance(text, str):
        raise TypeError(f"text must be TOML text, got {type(text).__name__}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{where}: not valid TOML: {e}") from e
    if not isinstance(data.get("name"), str):
        raise ValueError(f"{where}: the manifest needs a top-level string `name`")
    raw_components = data.get("component")
    if not isinstance(raw_components, list) or not raw_components:
        raise ValueError(f"{where}: the manifest needs at least one [[component]] table")
    comps = tuple(_component(raw, where) for raw in raw_components)
    seen: set[str] = set()
    for c in comps:
        if c.name in seen:
            raise ValueError(f"{where}: component {c.name!r} is listed twice")
        seen.add(c.name)
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise ValueError(f"{where}: [settings] must be a table")
    return StackManifest(data["name"], comps, dict(settings))


def load_manifest(path: str | Path) -> StackManifest:
    """Read a stack manifest (.toml) from disk."""
    p = check_path("path", path, what="a .toml manifest's path (str or Path)")
    if p.suffix != ".toml":
        raise ValueError(f"manifest path must end in .toml, got {p.name!r}")
    return parse_manifest(p.read_text(encoding="utf-8"), p.name)


def manifest_problems(manifest: StackManifest) -> list[str]:
    """Ref findings of a manifest's components: 'name: naming: ...' (ref or recorded kind breaks the repo's
    scheme) or 'name: policy: ...' (a movable release branch where the repo publishes a tag)."""
    if not isinstance(manifest, StackManifest):
        raise TypeError(f"manifest must be a StackManifest (load_manifest's), got {type(manifest).__name__}")
    out = []
    for c in manifest.components:
        if c.kind == UNPINNED:
            out.append(f"{c.name}: unpinned: cloned with no ref, so each build takes whatever its default branch holds")
            continue
        found = None if c.is_pypi else ref_finding(c.repo, c.ref, c.kind)
        if found:
            out.append(f"{c.name}: {found.kind}: {found.message}")
    return out


@dataclass(frozen=True)
class Change:
    name: str
    old: Component
    new: Component

    @property
    def what(self) -> str:
        parts = []
        if self.old.ref != self.new.ref:
            parts.append(f"ref {self.old.ref} -> {self.new.ref}")
        if self.old.kind != self.new.kind:
            parts.append(f"{self.old.kind} -> {self.new.kind}")
        if self.old.key != self.new.key:
            parts.append(f"repo {self.old.key} -> {self.new.key}")
        return ", ".join(parts)


@dataclass(frozen=True)
class UpgradeDiff:
    added: tuple[Component, ...]
    removed: tuple[Component, ...]
    changed: tuple[Change, ...]
    unchanged: tuple[str, ...]
    settings: tuple[tuple[str, object, object], ...]  # (key, old, new); None where absent

    def table(self) -> Table:
        """The diff as a table (show it with `kit.tables.show_table`), one row per component or setting that
        differs."""
        rows = [["added", c.name, "-", f"{c.kind} {c.ref}".rstrip()] for c in self.added]
        rows += [["removed", c.name, f"{c.kind} {c.ref}", "-"] for c in self.removed]
        rows += [
            ["changed", ch.name, f"{ch.old.kind} {ch.old.ref}", f"{ch.new.kind} {ch.new.ref}"] for ch in self.changed
        ]
        rows += [["setting", k, _show(o), _show(n)] for k, o, n in self.settings]
        return Table.of(["change", "component", "before", "after"], rows)


def _show(value: object) -> str:
    return "-" if value is None else json.dumps(value)


def upgrade_diff(old: StackManifest, new: StackManifest) -> UpgradeDiff:
    """What an upgrade adds, removes and changes (ref, tag vs branch, repo), matched by component name."""
    for label, m in (("old", old), ("new", new)):
        if not isinstance(m, StackManifest):
            raise TypeError(f"{label} must be a StackManifest (see load_manifest), got {type(m).__name__}")
    old_by = {c.name: c for c in old.components}
    new_by = {c.name: c for c in new.components}
    added = tuple(c for c in new.components if c.name not in old_by)
    removed = tuple(c for c in old.components if c.name not in new_by)
    changed = tuple(Change(n, old_by[n], new_by[n]) for n in new_by if n in old_by and old_by[n] != new_by[n])
    unchanged = tuple(n for n in new_by if n in old_by and old_by[n] == new_by[n])
    keys = list(dict.fromkeys([*old.settings, *new.settings]))
    settings = tuple(
        (k, old.settings.get(k), new.settings.get(k)) for k in keys if old.settings.get(k) != new.settings.get(k)
    )
    return UpgradeDiff(added, removed, changed, unchanged, settings)


# ---------------------------------------------------------------- one source of truth


def _check_manifest(manifest: object) -> StackManifest:
    if not isinstance(manifest, StackManifest):
        raise TypeError(f"manifest must be a StackManifest (see load_manifest), got {type(manifest).__name__}")
    return manifest


def _install_lines(manifest: StackManifest, var: bool) -> list[str]:
    _check_manifest(manifest)
    lines = []
    for c in manifest.components:
        ref = f"${{{_var_name(c)}}}" if var else c.ref
        if c.is_pypi:
            lines.append(f"pip install --no-cache-dir {c.repo.strip()[5:].strip()}=={ref}")
        elif c.kind == UNPINNED:
            lines.append(f"git clone --depth 1 {c.repo}")  # no ref: what upstream's images do for three repos
        elif c.kind == "commit":
            folder = c.key.split("/")[-1]
            lines.append(f"git clone {c.repo} {folder} && git -C {folder} checkout {ref}")
        else:
            lines.append(f"git clone --depth 1 --branch {ref} {c.repo}")
    return lines


def _var_name(c: Component) -> str:
    return re.sub(r"\W+", "_", c.name).upper().strip("_") + "_REF"


def render_install_script(manifest: StackManifest) -> str:
    """An install script whose every pin comes from `manifest` (generated: do not edit by hand)."""
    _check_manifest(manifest)
    head = [
        "#!/usr/bin/env bash",
        f"# generated from the manifest {manifest.name!r}: edit the manifest",
        "set -euo pipefail",
    ]
    return "\n".join(head + _install_lines(manifest, var=False)) + "\n"


def render_dockerfile(manifest: StackManifest, base_image: str = "ubuntu:22.04") -> str:
    """A Dockerfile whose pins are ARGs filled from `manifest`, used by one RUN per component."""
    _check_manifest(manifest)
    if not isinstance(base_image, str) or not base_image.strip() or any(c.isspace() for c in base_image):
        raise ValueError(f"base_image must be one image name without spaces, e.g. 'ubuntu:22.04', got {base_image!r}")
    lines = [f"# generated from the manifest {manifest.name!r}: edit the manifest", f"FROM {base_image}"]
    lines += [f"ARG {_var_name(c)}={c.ref}" for c in manifest.components if c.kind != UNPINNED]
    lines += [f"RUN {cmd}" for cmd in _install_lines(manifest, var=True)]
    return "\n".join(lines) + "\n"


def render_workflow(manifest: StackManifest, job: str = "npu_tests") -> str:
    """A CI workflow (YAML) whose refs come from `manifest` through the job's `env:` block."""
    _check_manifest(manifest)
    if not isinstance(job, str) or not re.fullmatch(r"[A-Za-z_][\w-]*", job):
        raise ValueError(f"job={job!r} must be a workflow job id (letters, digits, '_' and '-')")
    lines = [f"# generated from the manifest {manifest.name!r}: edit the manifest", f"name: {job}", "jobs:"]
    lines += [f"  {job}:", "    env:"]
    lines += [f"      {_var_name(c)}: {json.dumps(c.ref)}" for c in manifest.components if c.kind != UNPINNED]
    lines += ["    steps:", "      - name: install stack", "        run: |"]
    lines += [f"          {cmd}" for cmd in _install_lines(manifest, var=True)]
    return "\n".join(lines) + "\n"


def pin_components(manifest: StackManifest, commits: Mapping[str, str], name: str | None = None) -> StackManifest:
    """`manifest` with each component named in `commits` pinned to that commit (the fix for an unpinned clone)."""
    _check_manifest(manifest)
    unknown = sorted(set(commits) - {c.name for c in manifest.components})
    if unknown:
        raise ValueError(f"commits names components the manifest does not have: {unknown}")
    for who, ref in commits.items():
        if not isinstance(ref, str) or not COMMIT_HASH.fullmatch(ref):
            raise ValueError(f"commits[{who!r}] must be 7-40 lower-case hex digits, got {ref!r}")
    comps = tuple(Component(c.name, c.repo, "commit", commits[c.name]) if c.name in commits else c
                  for c in manifest.components)  # fmt: skip
    return StackManifest(name or manifest.name + ", pinned", comps, dict(manifest.settings))


def manifest_pins(manifest: StackManifest) -> set[tuple[str, str]]:
    """(repo key, ref) for each component: what every generated file must pin."""
    _check_manifest(manifest)
    return {(c.key, c.ref) for c in manifest.components if c.kind != UNPINNED}


def tree_problems(files: Mapping[str, str], manifest: StackManifest) -> list[str]:
    """Everything a CI check over a tree of files should fail on: pins that disagree with the manifest,
    ref findings (naming slips and branch-vs-tag policy, each labelled), and components pinned two ways (a git
    repository and the PyPI package of its name counted as one: `real_files.component_drift`)."""
    pins = pins_in_files(files)
    unpinned = [p for p in manifest_problems(manifest) if ": unpinned: " in p]
    drift = [d.describe() for d in component_drift(pins)]
    return manifest_mismatches(pins, manifest) + ref_findings(pins) + drift + unpinned


def manifest_mismatches(pins: Iterable[Pin], manifest: StackManifest) -> list[str]:
    """Pins that disagree with the manifest, or pin something the manifest does not list: 'file:line: why'."""
    if not isinstance(manifest, StackManifest):
        raise TypeError(f"manifest must be a StackManifest, got {type(manifest).__name__}")
    wanted = {c.key: c for c in manifest.components}
    out = []
    for p in pins:
        c = wanted.get(p.repo)
        if c is None:
            out.append(f"{p.file}:{p.line}: {p.repo} is pinned here but the manifest does not list it")
        elif c.ref != p.ref:
            out.append(f"{p.file}:{p.line}: {p.repo} at {p.ref}, but the manifest says {c.kind} {c.ref}")
    return out
