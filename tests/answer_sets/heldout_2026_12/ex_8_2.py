"""8.2 pip_line(manifest): one install command pinning every component. Checker args: (pip_line, [pinned])."""
import shlex

from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l08_dependency_stack import manifests as mf

# the notebook's set-up of `pinned`
new = mf.load_manifest(data_dir() / "stacks" / "ascend_megatron_0.18.toml")
pinned = mf.pin_components(new, {
    "TransformerEngineNPU": "e40ec34036eb7e04ad11b983f8c6b0dc9fcd88f9",
    "MindSpeed-Ops": "dbee3f41b156bb051fc046facf69548400be2be1",
    "MindSpeed-Bridge": "d82eec3ce2b31deb82cc5474b6813498efded908",
})


def _req(c):
    return f"{c.repo[len('pypi:'):]}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}"


# ---------------- wrong
def w_keeps_pypi_prefix(manifest):
    return "pip install " + " ".join(f"{c.repo}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components)


def w_plain_https(manifest):
    return "pip install " + " ".join(_req(c) if c.is_pypi else f"{c.repo}@{c.ref}" for c in manifest.components)


def w_drops_local_label(manifest):
    return "pip install " + " ".join(
        f"{c.repo[5:]}=={c.ref.split('+')[0]}" if c.is_pypi else _req(c) for c in manifest.components)


def w_single_equals(manifest):
    return "pip install " + " ".join(f"{c.repo[5:]}={c.ref}" if c.is_pypi else _req(c) for c in manifest.components)


def w_hash_for_ref(manifest):
    return "pip install " + " ".join(_req(c) if c.is_pypi else f"git+{c.repo}#{c.ref}" for c in manifest.components)


def w_pypi_only(manifest):
    return "pip install " + " ".join(_req(c) for c in manifest.components if c.is_pypi)


def w_unquoted_ge(manifest):
    return "pip install " + " ".join(f"{c.repo[5:]}>={c.ref}" if c.is_pypi else _req(c) for c in manifest.components)


def w_one_quoted_word(manifest):
    return 'pip install "' + " ".join(_req(c) for c in manifest.components) + '"'


def w_clone_then_install(manifest):
    lines = []
    for c in manifest.components:
        if c.is_pypi:
            lines.append(f"pip install {_req(c)}")
        else:
            folder = c.repo.rstrip("/").split("/")[-1].removesuffix(".git")
            lines.append(f"git clone {c.repo} {folder} && (cd {folder} && git checkout {c.ref}) && pip install ./{folder}")
    return " && ".join(lines)


def w_returns_in_loop(manifest):
    for c in manifest.components:
        return "pip install " + _req(c)


def w_editable_url(manifest):
    return "pip install " + " ".join(_req(c) if c.is_pypi else f"-e {c.repo}@{c.ref}" for c in manifest.components)


def w_list_of_words(manifest):
    return ["pip", "install", *(_req(c) for c in manifest.components)]


# ---------------- right
def r_python_m_quoted(manifest):
    return "python -m pip install " + " ".join(shlex.quote(_req(c)) for c in manifest.components)


def r_name_at_url(manifest):
    words = []
    for c in manifest.components:
        if c.is_pypi:
            words.append(f"'{c.repo.removeprefix('pypi:')}=={c.ref}'")
        else:
            name = c.repo.rstrip("/").split("/")[-1].removesuffix(".git")
            words.append(f"'{name} @ git+{c.repo}@{c.ref}'")
    return "pip3 install " + " ".join(words)


def r_one_per_line(manifest):
    return " && ".join(f"pip install {shlex.quote(_req(c))}" for c in manifest.components)


WRONG = {
    "keeps the pypi: prefix": (w_keeps_pypi_prefix, [pinned]),
    "plain https URL (no git+)": (w_plain_https, [pinned]),
    "drops the +cpu local label": (w_drops_local_label, [pinned]),
    "single '=' for versions": (w_single_equals, [pinned]),
    "git ref after '#'": (w_hash_for_ref, [pinned]),
    "PyPI packages only": (w_pypi_only, [pinned]),
    "unquoted >= (a redirection)": (w_unquoted_ge, [pinned]),
    "all pins in one quoted word": (w_one_quoted_word, [pinned]),
    "git clone + checkout, install the folder": (w_clone_then_install, [pinned]),
    "returns inside the loop (first component only)": (w_returns_in_loop, [pinned]),
    "-e URL@ref without git+": (w_editable_url, [pinned]),
    "returns a list of words": (w_list_of_words, [pinned]),
}
RIGHT = {
    "python -m pip, shlex.quote": (r_python_m_quoted, [pinned]),
    "pip3, 'name @ git+URL@ref'": (r_name_at_url, [pinned]),
    "one pip install per component, &&": (r_one_per_line, [pinned]),
}
