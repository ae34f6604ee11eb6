"""Lesson 08's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import re

import pytest

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_results
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l08_dependency_stack.checks import check_pin_policy
from verlstudy.lessons.l08_dependency_stack.manifests import load_manifest, render_install_script

DATA = data_dir()
MANIFESTS = [load_manifest(DATA / "stacks" / f"ascend_megatron_{v}.toml") for v in ("0.18", "0.16")]
HEX = re.compile(r"[0-9a-f]{7,40}")


def pin_policy(ref, tags, branches):
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if HEX.fullmatch(ref) else "missing"


def _by_table(ref, tags, branches):
    kinds = {**{b: "branch" for b in branches}, **{t: "tag" for t in tags}}
    if ref in (None, ""):
        return "unpinned"
    return kinds.get(ref) or (
        "commit" if all(ch in "0123456789abcdef" for ch in ref) and 7 <= len(ref) <= 40 else "missing"
    )


def _by_set_ops(ref, tags, branches):
    for word, names in (("tag", set(tags)), ("branch", set(branches))):
        if ref and {ref} & names:
            return word
    if ref is None or ref == "":
        return "unpinned"
    return "commit" if re.fullmatch(r"[0-9a-f]{7,40}", ref) else "missing"


def _naming_rule(ref, tags, branches):
    if not ref:
        return "unpinned"
    if ref.startswith("core_v") or ref.startswith("v"):
        return "tag"
    if ref.startswith("core_r"):
        return "branch"
    return pin_policy(ref, tags, branches)


def _no_branches(ref, tags, branches):
    return pin_policy(ref, tags, [])


def _full_hash_only(ref, tags, branches):
    got = pin_policy(ref, tags, branches)
    return "missing" if got == "commit" and len(ref) != 40 else got


def _prefix_match(ref, tags, branches):
    if not ref:
        return "unpinned"
    if any(t.startswith(ref) for t in tags):
        return "tag"
    if any(b.startswith(ref) for b in branches):
        return "branch"
    return pin_policy(ref, tags, branches)


def _none_only(ref, tags, branches):
    if ref is None:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if HEX.fullmatch(ref) else "missing"


def _missing_is_unpinned(ref, tags, branches):
    got = pin_policy(ref, tags, branches)
    return "unpinned" if got == "missing" else got


def _capitalised(ref, tags, branches):
    return pin_policy(ref, tags, branches).capitalize()


def _example_only(ref, tags, branches):
    return {"core_v0.18.0": "tag", "core_r0.18.0": "branch"}.get(ref, "unpinned")


def _hash_rule(is_hash, hash_first=False):
    """pin_policy with the lists read properly and `is_hash` as its test of a commit hash."""

    def answer(ref, tags, branches):
        if not ref:
            return "unpinned"
        if hash_first and is_hash(ref):
            return "commit"
        if ref in tags:
            return "tag"
        if ref in branches:
            return "branch"
        return "commit" if is_hash(ref) else "missing"

    return answer


def _int_base_16(ref):
    try:
        int(ref, 16)
    except ValueError:
        return False
    return 7 <= len(ref) <= 40


def pip_line(m):
    args = [f"{c.repo[5:]}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in m.components]
    return "pip install " + " ".join(args)


def _python_m(m):
    pins = []
    for c in m.components:
        pins.append(
            f"{c.repo.removeprefix('pypi:')}=={c.ref}" if c.repo.startswith("pypi:") else f"git+{c.repo}@{c.ref}"
        )
    return "python -m pip install " + " ".join(f"'{p}'" for p in pins)


def _pip3_two_commands(m):
    pypi = [f'"{c.repo[5:]}=={c.ref}"' for c in m.components if c.is_pypi]
    git = [f"git+{c.repo}@{c.ref}" for c in m.components if not c.is_pypi]
    return "pip3 install " + " ".join(pypi + git)


def _only_pypi(m):
    return "pip install " + " ".join(f"{c.repo[5:]}=={c.ref}" for c in m.components if c.is_pypi)


def _only_git(m):
    return "pip install " + " ".join(f"git+{c.repo}@{c.ref}" for c in m.components if not c.is_pypi)


def _git_no_ref(m):
    return "pip install " + " ".join(f"{c.repo[5:]}=={c.ref}" if c.is_pypi else f"git+{c.repo}" for c in m.components)


def _component_names(m):
    return "pip install " + " ".join(
        f"{c.name}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in m.components
    )


def _unquoted_quote(m):
    return "pip install 'a==1 " + pip_line(m)[12:]


def _strip_letters(m):
    pins = [f"{c.repo.strip('pypi:')}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in m.components]  # noqa: B005
    return "pip install " + " ".join(pins)


def _first_only(m):
    return pip_line(type(m)(m.name, m.components[:1], m.settings))


def _example_stack(m):
    return pip_line(MANIFESTS[0])


def _versions_unpinned(m):
    return "pip install " + " ".join(c.repo[5:] if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in m.components)


def _clone_branch(m):
    """Clones each repository with `git clone --branch <ref>` (git refuses a commit hash there), installs the folder."""
    steps, words = [], []
    for c in m.components:
        if c.is_pypi:
            words.append(f"{c.repo[5:]}=={c.ref}")
        else:
            steps.append(f"git clone --depth 1 --branch {c.ref} {c.repo}")
            words.append("./" + c.repo.rstrip("/").split("/")[-1].removesuffix(".git"))
    return " && ".join([*steps, "pip install " + " ".join(words)])


def _clone_checkout(m):
    """Clones, checks the ref out and installs the folder: it works, but the pins are not in the install command."""
    steps, words = [], []
    for c in m.components:
        if c.is_pypi:
            words.append(f"{c.repo[5:]}=={c.ref}")
        else:
            folder = c.repo.rstrip("/").split("/")[-1].removesuffix(".git")
            steps.append(f"git clone {c.repo} && git -C {folder} checkout {c.ref}")
            words.append(f"./{folder}")
    return " && ".join([*steps, "pip install " + " ".join(words)])


def _requirements_text(m):
    return "\n".join(pip_line(m)[len("pip install ") :].split())


def _commas(m):
    return "pip install " + ", ".join(pip_line(m)[len("pip install ") :].split())


def _one_quoted_word(m):
    return f'pip install "{pip_line(m)[len("pip install ") :]}"'


def _sudo(m):
    return "sudo " + pip_line(m)


WRONG = {
    "8.1": [
        Wrong(_naming_rule, "letters of the name", "decides by the core_r/core_v naming rule"),
        Wrong(_no_branches, "branches argument", "branches ignored"),
        Wrong(_full_hash_only, "short ones too", "only 40-digit hashes"),
        Wrong(_prefix_match, "whole names", "prefix match"),
        Wrong(_none_only, "empty string", "'' not unpinned"),
        Wrong(_missing_is_unpinned, "repository does not have", "missing called unpinned"),
        Wrong(_capitalised, "return one of the words", "'Tag' not 'tag'"),
        Wrong(_example_only, ("default branch", "repository", "tags", "hash"), "the notebook's two refs only"),
        Wrong(
            _hash_rule(lambda r: 7 <= len(r) <= 40 and all(c in "0123456789abcdefABCDEF" for c in r)),
            "upper-case",
            "upper-case hex taken for a commit",
        ),
        Wrong(_hash_rule(HEX.fullmatch, hash_first=True), "in the repository's tags", "hash test before the lists"),
        Wrong(
            _hash_rule(_int_base_16), ("upper-case", "not hex digits"), "int(ref, 16) lets 0x and underscores through"
        ),
        Wrong(_hash_rule(lambda r: set(r) <= set("0123456789abcdef")), "too short", "no length check"),
        Wrong(_hash_rule(lambda r: len(r) >= 7 and set(r) <= set("0123456789abcdef")), "too long", "no upper bound"),
        Wrong(_hash_rule(HEX.match), ("too long", "not hex digits"), "regex without an end anchor"),
        Wrong(
            _hash_rule(lambda r: 7 <= len(r) <= 40 and r.isalnum()),
            ("upper-case", "not hex digits"),
            "isalnum as the hash test",
        ),
        Wrong(
            _hash_rule(lambda r: re.match(r"^[0-9a-f]{7,40}$", r)), "newline", "'$' also matches before a final newline"
        ),
        Wrong(_hash_rule(lambda r: HEX.fullmatch(r.strip())), "newline", "the ref stripped before the hash test"),
    ],
    "8.2": [
        Wrong(_only_pypi, "git repositories are not pinned", "PyPI only"),
        Wrong(_only_git, "PyPI packages", "git only"),
        Wrong(_git_no_ref, "without '@<ref>'", "git URL without a ref"),
        Wrong(_component_names, "package name", "component name for the package"),
        Wrong(_unquoted_quote, "does not parse", "broken quoting"),
        Wrong(_first_only, ("not in the command", "not pinned"), "first component only"),
        Wrong(
            _example_stack, ("does not hold", "not in the command", "not pinned"), "the lesson's manifest hard-coded"
        ),
        Wrong(_versions_unpinned, "not pinned to their version", "versions dropped"),
        Wrong(lambda m: pip_line(m).split(), "one string", "a list of words"),
        Wrong(_strip_letters, "lost letters", "str.strip('pypi:') strips letters, not the prefix"),
        Wrong((_clone_branch, MANIFESTS), "outside the install command", "git clone --branch <ref> (fails for a hash)"),
        Wrong((_clone_checkout, MANIFESTS), "outside the install command", "git clone and checkout, then the folder"),
        Wrong(_requirements_text, "no install command", "requirements-file lines, no pip install"),
        Wrong(_commas, "comma", "pins separated by commas"),
        Wrong(_one_quoted_word, "one argument", "every pin inside one pair of quotes"),
    ],
}

RIGHT = {
    "8.1": [_by_table, _by_set_ops],
    "8.2": [
        _python_m,
        _pip3_two_commands,
        lambda m: pip_line(m).replace("pip install", "python3 -m pip install"),
        lambda m: "uv " + pip_line(m),  # uv's own pip: the reader takes its pins, so no word before it is stray
        lambda m: "if true; then " + pip_line(m) + "; fi",
        _sudo,  # sudo runs the install (the old reader refused it: a valid form, now read as pip reads it)
    ],
}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


def _stub(*_args):
    raise NotImplementedError("exercise")


def test_references_pass_and_stubs_are_not_attempted(capsys):
    assert "named cases" in check_pin_policy(pin_policy)
    check_exercise("8.1", _stub)
    assert exercise_results()["8.1"] == "not attempted"
    check_exercise("8.2", pip_line, MANIFESTS)
    assert exercise_results()["8.2"] == "correct"


def test_8_2_refuses_the_install_script_generator(assert_wrong):
    assert_wrong("8.2", render_install_script, MANIFESTS, mentions="library's own render_install_script")


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [("8.1", lambda fn: (fn,)), ("8.2", lambda fn: (fn, MANIFESTS))],
)
def test_no_mechanism_function_passes(assert_mechanism_does_not_pass, exercise_id, answer):
    assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l08_dependency_stack", answer=answer)


@pytest.mark.parametrize(
    ("answer", "not_said"),
    [
        (_component_names, "lost letters"),  # 'fla' is inside 'flash-linear-attention': not a cut name
        (_requirements_text, "not pinned to their version"),
        (_commas, "not pinned to their version"),
        (_one_quoted_word, "not pinned to their version"),
        # `uv pip install` and `then pip install` start with an install the reader reads: neither word is stray
        (lambda m: "uv " + _versions_unpinned(m), "starts with"),
        (lambda m: "if true; then " + _versions_unpinned(m) + "; fi", "starts with"),
    ],
)
def test_8_2_messages_name_the_mistake_made_not_another(assert_wrong, answer, not_said):
    assert not_said not in assert_wrong("8.2", answer, MANIFESTS, mentions="")


def test_8_2_a_clone_with_branch_is_refused_and_told_git_refuses_a_commit_hash_there(assert_wrong):
    # the lesson's own manifests pin repositories to commits: this command would fail on them
    hashes = [c.ref for m in MANIFESTS for c in m.components if c.kind == "commit"]
    assert hashes and all(f"--branch {h} " in _clone_branch(m) for m in MANIFESTS for h in hashes if h in str(m))
    message = assert_wrong("8.2", _clone_branch, MANIFESTS, mentions="outside the install command")
    assert "refuses the commit hash" in message
