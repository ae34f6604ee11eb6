"""One kernel name everywhere: JupyterLab marks a notebook modified when its kernelspec's display name is not the
installed kernel's, so the notebooks, the twins' KERNELSPEC and what `make setup` installs must agree."""

import json
import re

from verlstudy.course import registry, twins
from verlstudy.course.registry import project_root


def test_makefile_installs_the_kernel_under_the_notebooks_display_name():
    makefile = (project_root() / "Makefile").read_text()
    (name,) = re.findall(r"^KERNEL_DISPLAY_NAME := (.+)$", makefile, flags=re.MULTILINE)
    installs = re.findall(r"ipykernel install .*", makefile)
    assert installs and all('--display-name "$(KERNEL_DISPLAY_NAME)"' in line for line in installs), installs
    assert name == twins.KERNELSPEC["display_name"]
    for lesson in registry.LESSONS:
        spec = json.loads(lesson.notebook.read_text())["metadata"]["kernelspec"]
        assert spec == twins.KERNELSPEC, f"{lesson.notebook.name}: {spec}"
