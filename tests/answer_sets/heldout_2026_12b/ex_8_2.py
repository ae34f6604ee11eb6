"""Exercise 8.2: pip_line(manifest), one pip install command pinning every component of a manifest."""

import shlex

# The text: manifest.components, each with .repo ("pypi:NAME" or a git URL), .ref, .is_pypi; return one shell
# command str: `pip install ...` (or pip3, python -m pip) pinning `NAME==version` for pypi and `git+URL@ref` for git;
# the checker splits it as a POSIX shell and parses each word as pip; a line pip refuses, or one installing
# something else, is wrong. Called as check_exercise("8.2", pip_line) (the lesson's manifest list is optional).


def _name(c):
    return c.repo[len("pypi:") :]


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_ge_unquoted(manifest):
    # ">=" unquoted: the shell reads ">" as a redirection, and >= is not exactly the version
    return "pip install " + " ".join(
        f"{_name(c)}>={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    )


def w_single_equals(manifest):
    # "name=version": pip refuses a single "="
    return "pip install " + " ".join(
        f"{_name(c)}={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    )


def w_keeps_prefix(manifest):
    # keeps "pypi:" in the name
    return "pip install " + " ".join(
        f"{c.repo}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    )


def w_strip_letters(manifest):
    # str.strip("pypi:") strips those letters from both ends: "pypi:ipython" becomes "thon"
    return "pip install " + " ".join(
        f"{c.repo.strip('pypi:')}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    )


def w_plain_url(manifest):
    # a plain https URL without git+: pip does not know how to fetch it at a ref
    return "pip install " + " ".join(
        f"{_name(c)}=={c.ref}" if c.is_pypi else f"{c.repo}@{c.ref}" for c in manifest.components
    )


def w_unquoted_direct(manifest):
    # "name @ git+URL@ref" unquoted: the shell splits it into three words
    words = []
    for c in manifest.components:
        if c.is_pypi:
            words.append(f"{_name(c)}=={c.ref}")
        else:
            name = c.repo.rstrip("/").split("/")[-1].removesuffix(".git")
            words.append(f"{name} @ git+{c.repo}@{c.ref}")
    return "pip install " + " ".join(words)


def w_hash_ref(manifest):
    # "git+URL#ref": the fragment is not a ref, so the default branch is installed
    return "pip install " + " ".join(
        f"{_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}#{c.ref}" for c in manifest.components
    )


def w_commas(manifest):
    # requirements joined by commas: one glued word
    return "pip install " + ",".join(
        f"{_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    )


def w_pypi_only(manifest):
    # forgets the git components
    return "pip install " + " ".join(f"{_name(c)}=={c.ref}" for c in manifest.components if c.is_pypi)


def w_dry_run(manifest):
    # --dry-run installs nothing
    return "pip install --dry-run " + " ".join(
        f"{_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    )


def w_local_label_dropped(manifest):
    # drops a local label such as +cpu: it is part of the version
    return "pip install " + " ".join(
        f"{_name(c)}=={c.ref.split('+')[0]}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    )


def w_or_chain(manifest):
    # one install per component joined by "||": the later ones never run when the first succeeds
    return " || ".join(
        f"pip install {_name(c)}=={c.ref}" if c.is_pypi else f"pip install git+{c.repo}@{c.ref}"
        for c in manifest.components
    )


def w_egg_no_ref(manifest):
    # "#egg=" with no "@ref": installs the default branch
    parts = []
    for c in manifest.components:
        if c.is_pypi:
            parts.append(f"{_name(c)}=={c.ref}")
        else:
            name = c.repo.rstrip("/").split("/")[-1].removesuffix(".git")
            parts.append(f"git+{c.repo}#egg={name}")
    return "pip install " + " ".join(parts)


def w_exact_range(manifest):
    # ">=v,<=v" quoted: fine for a plain version, but PEP 440 allows a local label (+cpu, in the domain) only with
    # == or !=, so pip refuses the requirement for such a version
    reqs = [f"{_name(c)}>={c.ref},<={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(shlex.quote(r) for r in reqs)


def w_compatible_release(manifest):
    # "~=v" quoted: lets later releases in, and with a local label (+cpu) pip refuses it (local labels only with ==)
    reqs = [f"{_name(c)}~={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(shlex.quote(r) for r in reqs)


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_quoted_module(manifest):
    # python -m pip, every requirement quoted with shlex.quote
    reqs = [f"{_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "python -m pip install " + " ".join(shlex.quote(r) for r in reqs)


def r_direct_refs(manifest):
    # pip3, git components as quoted "name @ git+URL@ref", pypi pins quoted with blanks around ==
    words = []
    for c in manifest.components:
        if c.is_pypi:
            words.append(f"'{_name(c)} == {c.ref}'")
        else:
            name = c.repo.rstrip("/").split("/")[-1].removesuffix(".git")
            words.append(shlex.quote(f"{name} @ git+{c.repo}@{c.ref}"))
    return "pip3 install " + " ".join(words)


def r_arbitrary_equality(manifest):
    # "===" with the manifest's own text: an exact text match, which the version string is
    reqs = [f"{_name(c)}==={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(shlex.quote(r) for r in reqs)


def r_one_per_line(manifest):
    # one install per component, joined by " && "
    lines = []
    for c in manifest.components:
        req = f"{_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}"
        lines.append(f"pip install {shlex.quote(req)}")
    return " && ".join(lines)


WRONG = {
    ">= unquoted": (w_ge_unquoted,),
    "single =": (w_single_equals,),
    "pypi: kept": (w_keeps_prefix,),
    "strip('pypi:')": (w_strip_letters,),
    "plain https URL": (w_plain_url,),
    "unquoted name @ url": (w_unquoted_direct,),
    "#ref fragment": (w_hash_ref,),
    "comma-joined": (w_commas,),
    "pypi only": (w_pypi_only,),
    "--dry-run": (w_dry_run,),
    "local label dropped": (w_local_label_dropped,),
    "|| chain": (w_or_chain,),
    "#egg= without a ref": (w_egg_no_ref,),
    ">=v,<=v with a local label": (w_exact_range,),
    "~=v": (w_compatible_release,),
}

RIGHT = {
    "python -m pip, shlex.quote": (r_quoted_module,),
    "quoted direct references": (r_direct_refs,),
    "one install per line, &&": (r_one_per_line,),
    "=== with the manifest's text": (r_arbitrary_equality,),
}


UNSURE = {}
