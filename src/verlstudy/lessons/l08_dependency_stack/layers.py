"""The stack as layers, before and after (lesson 08's picture): each component coloured by what pins it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from verlstudy.kit.params import check_instance

# bottom to top: what sits on what in the Ascend images
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("torch", ("pypi:torch", "pypi:torchvision")),
    ("vLLM", ("vllm-project/vllm", "vllm-project/vllm-ascend")),
    ("Megatron", ("nvidia/megatron-lm", "huggingface/transformers")),
    (
        "MindSpeed",
        ("ascend/mindspeed", "ascend/megatronadaptor", "ascend/transformerenginenpu", "ascend/mindspeed-ops"),
    ),
    ("bridge", ("pypi:mbridge", "ascend/mindspeed-bridge", "nvidia-nemo/megatron-bridge")),
)
SHORT = {"transformerenginenpu": "TE-NPU", "megatronadaptor": "adaptor", "mindspeed-ops": "MS-Ops",
         "mindspeed-bridge": "MS-Bridge", "megatron-bridge": "Megatron-Bridge"}  # fmt: skip
KIND_COLORS = {"tag": "#2e8b57", "version": "#2e8b57", "commit": "#1f5aa6", "branch": "#edae49", "unpinned": "#d1495b"}


def _label(repo: str) -> str:
    name = repo.split("/")[-1].removeprefix("pypi:")
    return SHORT.get(name, name)


def draw_layers(columns: Mapping[str, Mapping[str, str]], layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> None:
    """Draw {column title: {repo: pin kind}} as stacked layers, one column per set of files; print the grid too.

    A repo missing from a column is not installed there. Pin kinds: tag, version, commit, branch, unpinned.
    """
    check_instance("columns", columns, Mapping, what="a mapping {column title: {repo: pin kind}}")
    if not columns:
        raise ValueError("argument columns must hold at least one column {title: {repo: pin kind}}")
    for title, kinds in columns.items():
        check_instance(f"columns[{title!r}]", kinds, Mapping, what="a mapping {repo: pin kind}")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    from verlstudy.kit.plots import apply_style, fit_layout

    apply_style()
    fig, ax = plt.subplots(figsize=(6.8, 3.8))  # the width the picture had when printed trimmed
    ax.axis("off")
    width = 1.0 / len(columns)
    for col, (title, kinds) in enumerate(columns.items()):
        x = col * width
        ax.text(x + width / 2, 1.02, title, ha="center", fontsize=8, weight="bold")
        for row, (layer, repos) in enumerate(layers):
            y = row / len(layers)
            ax.text(x + 0.005, y + 0.16, layer, fontsize=6, color="grey")
            present = [r for r in repos if r in kinds]
            for k, repo in enumerate(present):
                w = (width - 0.02) / max(len(present), 1)
                ax.add_patch(
                    Rectangle((x + 0.01 + k * w, y + 0.01), w * 0.95, 0.14, color=KIND_COLORS[kinds[repo]], alpha=0.55)
                )
                # inside its box, so the layout pass need not measure it
                ax.text(x + 0.01 + k * w + w * 0.47, y + 0.08, _label(repo), ha="center",
                        va="center", fontsize=5.5, in_layout=False)  # fmt: skip
    handles = [Patch(color=c, alpha=0.55, label=k) for k, c in KIND_COLORS.items() if k != "version"]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=4, fontsize=7)
    ax.set_title("The Ascend image stack by layer, coloured by what pins each component", pad=18)
    fit_layout(fig)  # the figure is shown untrimmed: lay the boxes out over all of it
    plt.show()
    for title, kinds in columns.items():
        print(
            f"{title}: "
            + ", ".join(f"{r.split('/')[-1]}={k}" for _, repos in layers for r in repos if (k := kinds.get(r)))
        )
