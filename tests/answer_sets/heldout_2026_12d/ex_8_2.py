"""Exercise 8.2: pip_line(manifest), held-out answers.

Components: .repo ("pypi:NAME" or an https git URL), .ref (version, tag, branch or hash), .is_pypi, .name.
The notebook calls check_exercise("8.2", pip_line, [pinned]); these tuples pass the function only (see README).
"""

import re
import shlex


def _pypi_name(c):
    return c.repo[len("pypi:") :]


def _req_name(c):
    return re.sub(r"[^A-Za-z0-9._-]+", "-", c.repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")) or "pkg"


# WRONG ---------------------------------------------------------------
def w_strip_prefix_chars(manifest):
    # str.strip("pypi:") strips letters p, y, i from both ends: "pyyaml" becomes "aml"
    args = [f"{c.repo.strip('pypi:')}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_plain_https(manifest):
    # a plain https:// URL (no git+): pip refuses it as a requirement
    args = [f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_unquoted_at(manifest):
    # `name @ git+URL@ref` unquoted: the shell splits it into three words
    args = [
        f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"{_req_name(c)} @ git+{c.repo}@{c.ref}"
        for c in manifest.components
    ]
    return "pip install " + " ".join(args)


def w_hash_fragment(manifest):
    # the ref after '#' instead of '@': pip installs the default branch
    args = [f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}#{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_single_equals(manifest):
    # `name=version` is not a requirement pip accepts
    args = [f"{_pypi_name(c)}={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_one_quoted_word(manifest):
    # every pin inside one quoted word: pip reads one invalid requirement
    args = [f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + shlex.quote(" ".join(args))


def w_no_git(manifest):
    # installs only the PyPI packages: git components are left out
    return "pip install " + " ".join(f"{_pypi_name(c)}=={c.ref}" for c in manifest.components if c.is_pypi)


def w_last_ref_part(manifest):
    # keeps only the last part of a ref: "releases/v0.23.0" becomes "v0.23.0"
    args = [
        f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref.rsplit('/', 1)[-1]}"
        for c in manifest.components
    ]
    return "pip install " + " ".join(args)


def w_dry_run(manifest):
    # --dry-run installs nothing
    args = [f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install --dry-run " + " ".join(args)


def w_requirements_file(manifest):
    # writes a requirements file and installs it: the command line does not show the pins
    lines = "\\n".join(
        f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    )
    return f"printf '{lines}\\n' > /tmp/req.txt && pip install -r /tmp/req.txt"


def w_or_chain(manifest):
    # one install per component joined by ||: only the first runs when it succeeds
    parts = [
        f"pip install {_pypi_name(c)}=={c.ref}" if c.is_pypi else f"pip install git+{c.repo}@{c.ref}"
        for c in manifest.components
    ]
    return " || ".join(parts)


def w_lower_bound(manifest):
    # `>=` unquoted is a shell redirection, and a lower bound does not pin
    args = [f"{_pypi_name(c)}>={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


# RIGHT ---------------------------------------------------------------
def r_python_m_pip_quoted(manifest):
    words = ["python", "-m", "pip", "install"]
    for c in manifest.components:
        if c.is_pypi:
            words.append(f"{_pypi_name(c)}=={c.ref}")
        else:
            words.append(f"{_req_name(c)} @ git+{c.repo}@{c.ref}")
    return " ".join(shlex.quote(w) for w in words)


def r_one_per_line(manifest):
    lines = ["set -e"]
    for c in manifest.components:
        target = f"'{_pypi_name(c)} == {c.ref}'" if c.is_pypi else shlex.quote(f"git+{c.repo}@{c.ref}")
        lines.append(f"pip3 install {target}")
    return "\n".join(lines)


def r_uv_editable_egg(manifest):
    pypi = [shlex.quote(f"{_pypi_name(c)}=={c.ref}") for c in manifest.components if c.is_pypi]
    git = [
        f"-e {shlex.quote(f'git+{c.repo}@{c.ref}#egg={_req_name(c)}')}" for c in manifest.components if not c.is_pypi
    ]
    commands = []
    if pypi:
        commands.append("uv pip install " + " ".join(pypi))
    if git:
        commands.append("uv pip install " + " ".join(git))
    return " && ".join(commands)


WRONG = {
    "strip('pypi:')": (w_strip_prefix_chars,),
    "plain https URL": (w_plain_https,),
    "unquoted name @ url": (w_unquoted_at,),
    "ref after #": (w_hash_fragment,),
    "single =": (w_single_equals,),
    "all pins in one quoted word": (w_one_quoted_word,),
    "git components left out": (w_no_git,),
    "last part of the ref": (w_last_ref_part,),
    "--dry-run": (w_dry_run,),
    "requirements file": (w_requirements_file,),
    "|| chain": (w_or_chain,),
    "unquoted >=": (w_lower_bound,),
}
RIGHT = {
    "python -m pip, every word quoted, name @ url": (r_python_m_pip_quoted,),
    "set -e, pip3 per line, spaced == in quotes": (r_one_per_line,),
    "uv pip, -e git+...#egg=, && joined": (r_uv_editable_egg,),
}


def u_version_range(manifest):
    args = []
    for c in manifest.components:
        args.append(
            shlex.quote(f"{_pypi_name(c)}>={c.ref},<={c.ref}") if c.is_pypi else shlex.quote(f"git+{c.repo}@{c.ref}")
        )
    return "pip install " + " ".join(args)


# ">=v,<=v" meets only the version: the docstring allows "other bounds the version meets", but a local label
# (+cpu) under <= / >= is compared by PEP 440 rules that may admit other local builds
UNSURE = {"bounds >=v,<=v": (u_version_range,)}
