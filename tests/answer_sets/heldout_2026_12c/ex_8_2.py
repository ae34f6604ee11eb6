"""Exercise 8.2 answers: pip_line(manifest) -> one shell command pinning every component.

A component has .repo ("pypi:<name>" or a git URL), .ref (version, tag, branch or commit), .is_pypi, .name, .kind.
The notebook calls check_exercise("8.2", pip_line, [pinned]); these tuples hand over the function only.
"""

import shlex


def _pypi_name(component):
    return component.repo[len("pypi:") :]


def _repo_name(component):
    # a requirement name from the repository's last path part
    return component.repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")


def _words(manifest):
    return [f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]


# --- wrong ---
def w_strip_prefix_chars(manifest):
    # str.strip("pypi:") strips characters, not the prefix: names starting or ending in p, y, i lose letters
    args = [f"{c.repo.strip('pypi:')}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_unquoted_direct_reference(manifest):
    # `name @ git+URL@ref` unquoted: the shell splits it into three words
    args = [
        f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"{c.name} @ git+{c.repo}@{c.ref}" for c in manifest.components
    ]
    return "pip install " + " ".join(args)


def w_no_ref(manifest):
    # a git URL without its ref: installs whatever the default branch holds
    args = [f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_plain_url(manifest):
    # a plain https URL without git+: pip cannot install a repository page
    args = [f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_requirements_file(manifest):
    # writes a requirements file first: what is installed is not on the command line
    lines = "\\n".join(_words(manifest))
    return f"printf '{lines}\\n' > /tmp/req.txt && pip install -r /tmp/req.txt"


def w_single_equals(manifest):
    # `name=version`: not a requirement pip accepts
    args = [f"{_pypi_name(c)}={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_unquoted_ge(manifest):
    # `name>=version` unquoted: the shell reads `>` as a redirection (and it is no pin)
    args = [f"{_pypi_name(c)}>={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


def w_dry_run(manifest):
    # --dry-run installs nothing
    return "pip install --dry-run " + " ".join(_words(manifest))


def w_one_quoted_word(manifest):
    # every pin inside one quoted word: pip reads one invalid requirement
    return "pip install " + shlex.quote(" ".join(_words(manifest)))


def w_or_chain(manifest):
    # installs joined by `||`: the second runs only if the first fails
    return " || ".join(f"pip install {shlex.quote(w)}" for w in _words(manifest))


def w_always_refs_tags(manifest):
    # writes refs/tags/ for every git ref: a branch or a commit is not a tag
    args = [
        f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@refs/tags/{c.ref}" for c in manifest.components
    ]
    return "pip install " + " ".join(args)


def w_clone_then_install(manifest):
    # clones and checks out, then installs the folder: the pin is not on the pip command line
    parts = []
    for i, c in enumerate(manifest.components):
        if c.is_pypi:
            parts.append(f"pip install {shlex.quote(_pypi_name(c) + '==' + c.ref)}")
        else:
            parts.append(f"git clone {c.repo} /tmp/c{i} && git -C /tmp/c{i} checkout {c.ref} && pip install /tmp/c{i}")
    return " && ".join(parts)


def w_pypi_skipped(manifest):
    # forgets the pypi: components
    return "pip install " + " ".join(f"git+{c.repo}@{c.ref}" for c in manifest.components if not c.is_pypi)


# --- right ---
def r_python_m_pip_quoted(manifest):
    words = []
    for component in manifest.components:
        if component.is_pypi:
            words.append(f"{component.repo.removeprefix('pypi:')}=={component.ref}")
        else:
            words.append(f"git+{component.repo}@{component.ref}")
    return "python -m pip install " + " ".join(shlex.quote(w) for w in words)


def r_one_install_per_component(manifest):
    # one pip3 install per component, `name @ URL` in double quotes, joined by &&
    commands = []
    for c in manifest.components:
        if c.is_pypi:
            commands.append(f'pip3 install "{c.repo.split(":", 1)[1]} == {c.ref}"')
        else:
            commands.append(f'pip3 install "{_repo_name(c)} @ git+{c.repo}@{c.ref}"')
    return " && ".join(commands)


def r_script_lines(manifest):
    # a small script: set -e, an echo, then one install per line
    lines = ["set -e", "echo installing the pinned stack"]
    for c in manifest.components:
        req = f"{_pypi_name(c)}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}"
        lines.append("pip install " + shlex.quote(req))
    return "\n".join(lines)


def r_editable_egg(manifest):
    # editable git installs with #egg=, pypi pins first
    pypi = [shlex.quote(f"{_pypi_name(c)}=={c.ref}") for c in manifest.components if c.is_pypi]
    git = [
        f"-e {shlex.quote(f'git+{c.repo}@{c.ref}#egg={_repo_name(c)}')}" for c in manifest.components if not c.is_pypi
    ]
    return "pip install " + " ".join(pypi + git)


# --- unsure ---
def u_closed_range(manifest):
    # ">=v,<=v" admits only v; the docstring allows "other bounds the version meets", the notebook asks for ==
    args = [
        shlex.quote(f"{_pypi_name(c)}>={c.ref},<={c.ref}") if c.is_pypi else f"git+{c.repo}@{c.ref}"
        for c in manifest.components
    ]
    return "pip install " + " ".join(args)


def u_lower_bound_only(manifest):
    # "name>=v" is met by v but pins nothing; the docstring's "other bounds the version meets" could be read to allow it
    args = [
        shlex.quote(f"{_pypi_name(c)}>={c.ref}") if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components
    ]
    return "pip install " + " ".join(args)


def u_triple_equals(manifest):
    # "===v" with the manifest's own text: exact by text; the docstring warns === compares text, and whether the
    # manifest's text is the one a distribution reports is left open
    args = [f"{_pypi_name(c)}==={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


WRONG = {
    "strip('pypi:')": (w_strip_prefix_chars,),
    "unquoted name @ URL": (w_unquoted_direct_reference,),
    "git URL without ref": (w_no_ref,),
    "plain https URL": (w_plain_url,),
    "requirements file": (w_requirements_file,),
    "single =": (w_single_equals,),
    "unquoted >=": (w_unquoted_ge,),
    "--dry-run": (w_dry_run,),
    "one quoted word": (w_one_quoted_word,),
    "|| chain": (w_or_chain,),
    "refs/tags/ always": (w_always_refs_tags,),
    "clone then install folder": (w_clone_then_install,),
    "pypi skipped": (w_pypi_skipped,),
}
RIGHT = {
    "python -m pip, shlex.quote": (r_python_m_pip_quoted,),
    "pip3 per component, name @ URL": (r_one_install_per_component,),
    "script lines": (r_script_lines,),
    "editable with #egg": (r_editable_egg,),
}
UNSURE = {
    ">=v,<=v": (u_closed_range,),
    ">=v only": (u_lower_bound_only,),
    "===v": (u_triple_equals,),
}
