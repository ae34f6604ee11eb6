"""`verlstudy hub init|users` without a running hub (fast, no network, no root): what DIR gets, and bad input that
changes nothing."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from verlstudy.hub import cli, init, users
from verlstudy.hub.config_template import MARKER


def _init(folder: Path, *extra: str) -> int:
    return cli.main(["init", str(folder), "--users", "alice,bob", "--admin", "teach", "--no-system-users", *extra])


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_init_writes_config_settings_private_files_and_the_student_repo(tmp_path: Path) -> None:
    folder = tmp_path / "room"
    assert _init(folder, "--port", str(init.free_port())) == 0
    config = (folder / init.CONFIG_FILE).read_text()
    assert config.startswith(MARKER)
    for needed in ("firstuseauthenticator", "jupyterhub_idle_culler", "verlstudy.hub.progress_service", "api_tokens"):
        assert needed in config
    settings = json.loads((folder / init.SETTINGS).read_text())
    assert settings["learners"] == ["alice", "bob"] and settings["admin"] == "teach"
    for name in init.PRIVATE:
        assert (folder / name).stat().st_mode & 0o777 == 0o600, name
    assert len((folder / init.TOKEN_FILE).read_text().strip()) == 64
    tree = subprocess.run(
        ["git", "--git-dir", str(folder / init.REPO), "ls-tree", "--name-only", init.BRANCH],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "00_start_here.ipynb" in tree
    compile(config, str(folder / init.CONFIG_FILE), "exec")  # the config is valid Python


def test_the_student_repo_holds_stubs_not_solutions(tmp_path: Path) -> None:
    folder = tmp_path / "room"
    assert _init(folder) == 0
    shown = subprocess.run(
        ["git", "--git-dir", str(folder / init.REPO), "show", f"{init.BRANCH}:00_start_here.ipynb"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert 'NotImplementedError(\\"exercise 0.1\\")' in shown
    assert "torch.Generator().manual_seed(seed)" not in shown


def test_users_add_and_remove_change_hub_json(tmp_path: Path) -> None:
    folder = tmp_path / "room"
    assert _init(folder) == 0
    assert cli.main(["users", "add", str(folder), "carol"]) == 0
    assert init.load(folder).learners == ["alice", "bob", "carol"]
    assert cli.main(["users", "remove", str(folder), "alice"]) == 0
    assert init.load(folder).learners == ["bob", "carol"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--users", "Alice", "--admin", "teach"], "not a valid Unix user name"),
        (["--users", "al ice", "--admin", "teach"], "not a valid Unix user name"),
        (["--users", "alice,alice", "--admin", "teach"], "given twice"),
        (["--users", "alice", "--admin", "alice"], "also named as a learner"),
        (["--users", "a" * 40, "--admin", "teach"], "too long"),
    ],
)
def test_bad_names_are_one_line_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    folder = tmp_path / "room"
    assert cli.main(["init", str(folder), *argv, "--no-system-users"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not folder.exists()


def test_a_foreign_config_is_refused_and_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "room"
    folder.mkdir()
    (folder / init.CONFIG_FILE).write_text("c = get_config()\n")
    before = _snapshot(folder)
    assert _init(folder) == 2
    assert "was not written by verlstudy hub init" in capsys.readouterr().err
    assert _snapshot(folder) == before
    assert cli.main(["users", "add", str(folder), "carol"]) == 2


def test_a_port_in_use_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert _init(tmp_path / "room", "--port", str(port)) == 2
    assert f"port {port} is in use" in capsys.readouterr().err
    assert not (tmp_path / "room").exists()


def test_system_users_without_root_say_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    folder = tmp_path / "room"
    assert cli.main(["init", str(folder), "--users", "alice", "--admin", "teach"]) == 2
    assert "needs root: run it with sudo" in capsys.readouterr().err
    assert not folder.exists()


def test_hub_up_without_root_for_system_users_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "room"
    assert _init(folder) == 0
    settings = init.load(folder)
    settings.system_users = True
    init.save(folder, settings)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert cli.main(["up", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "needs root" in err and "sudo" in err and err.count("\n") == 1


def test_pull_link_names_the_repo_branch_and_target() -> None:
    link = init.pull_link("http://host:8000/", "/srv/hub/student.git")
    assert link.startswith("http://host:8000/hub/user-redirect/git-pull?repo=%2Fsrv%2Fhub%2Fstudent.git")
    assert "branch=main" in link and "targetpath=verlstudy" in link


def test_names_check_and_prefix() -> None:
    assert users.check_names(["a", "b_1", "c-2"]) == ["a", "b_1", "c-2"]
    assert users.system_name("alice") == "vs-alice"
    with pytest.raises(ValueError, match="valid Unix"):
        users.check_names(["1abc"])


def test_ci_publishes_the_hubs_own_student_edition_as_the_student_branch() -> None:
    # the public `student` branch other hubs pull (docs/hub.md) is built by the same function as a hub's student.git
    root = Path(__file__).resolve().parents[2]
    workflow = (root / ".github" / "workflows" / "student-branch.yml").read_text()
    assert "from verlstudy.hub.init import build_student_repo" in workflow
    assert "main:student" in workflow and "branches: [main]" in workflow
    assert init.BRANCH == "main"  # the bare repository's branch the workflow pushes
    assert "branch=student" in (root / "docs" / "hub.md").read_text()


def test_remove_delete_home_deletes_a_trial_learners_home_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 43 HB22: on a trial hub --delete-home was ignored in silence and homes/ben stayed
    folder = tmp_path / "room"
    assert _init(folder) == 0
    for name in ("alice", "bob"):
        (folder / "homes" / name / "verlstudy").mkdir(parents=True)
        (folder / "homes" / name / "verlstudy" / "mine.txt").write_text("my work")
    capsys.readouterr()
    assert cli.main(["users", "remove", str(folder), "alice"]) == 0
    assert "removed: alice; home kept (--delete-home deletes it)" in capsys.readouterr().out
    assert (folder / "homes" / "alice" / "verlstudy" / "mine.txt").exists()
    assert cli.main(["users", "remove", str(folder), "bob", "--delete-home"]) == 0
    assert "removed: bob; home deleted" in capsys.readouterr().out
    assert not (folder / "homes" / "bob").exists() and init.load(folder).learners == []
    assert cli.main(["users", "add", str(folder), "cy", "--delete-home"]) == 2
    assert "--delete-home goes with `users remove`" in capsys.readouterr().err


def test_a_linked_home_is_not_followed_by_delete_home(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "room"
    assert _init(folder) == 0
    elsewhere = tmp_path / "precious"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("x")
    (folder / "homes").mkdir(exist_ok=True)
    (folder / "homes" / "alice").symlink_to(elsewhere)
    assert cli.main(["users", "remove", str(folder), "alice", "--delete-home"]) == 2
    assert "is a link or a file" in capsys.readouterr().err
    assert (elsewhere / "keep.txt").exists() and init.load(folder).learners == ["alice", "bob"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"learners": 5', "not valid JSON: Expecting"),
        ("[1, 2]", "a JSON list, not an object"),
        ('{"learners": 5, "admin": "teach"}', "'learners' is 5"),
        ('{"learners": ["a"]}', "no 'admin'"),
    ],
)
def test_a_damaged_hub_json_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    # issue 43 HB21: a torn hub.json gave "Expecting ',' delimiter: line 2 column 1 (char 15)" and nothing else
    folder = tmp_path / "room"
    assert _init(folder) == 0
    (folder / init.SETTINGS).write_text(text)
    capsys.readouterr()
    assert cli.main(["users", "add", str(folder), "dan"]) == 2
    err = capsys.readouterr().err
    assert f"{folder / init.SETTINGS} is damaged ({says}" in err and "nothing changed" in err, err
    assert len(err.strip().splitlines()) == 1 and (folder / init.SETTINGS).read_text() == text


def test_delete_home_says_which_homes_it_could_not_delete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a system user verlstudy did not create is left alone (users.remove): its home too, and the line says so
    folder = tmp_path / "room"
    assert _init(folder) == 0
    data = json.loads((folder / init.SETTINGS).read_text())
    (folder / init.SETTINGS).write_text(json.dumps({**data, "system_users": True}))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(users, "is_ours", lambda system: False)
    capsys.readouterr()
    assert cli.main(["users", "remove", str(folder), "alice", "--delete-home"]) == 0
    assert "home kept for alice: no system user verlstudy created" in capsys.readouterr().out
