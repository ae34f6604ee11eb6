"""One rule for every writing command: never the course's own folders, never over a file verlstudy did not write.

The guard (files.check_target) and the written-files manifest (files.Manifest) are tested here directly, and
through each command as a careless user would meet them: an annotated copy of an executed notebook, a user's
own page in a site folder, each forbidden target, a pipe as a report path, a corrupt file of each kind.
"""

import json
import os
import threading
from pathlib import Path

import nbformat
import pytest

from verlstudy.course import cli, files, progress, registry, reports, runner
from verlstudy.kit import resources

LESSON0 = registry.get_lesson(0)


def _no_kernel(monkeypatch):
    def refuse(*args, **kwargs):
        pytest.fail("no kernel may start before the paths are checked")

    monkeypatch.setattr(runner, "run_lessons", refuse)
    monkeypatch.setattr(runner, "execute_with_papermill", refuse)
    monkeypatch.setattr(progress, "execute_with_papermill", refuse)


EXECUTED = '{"cells": [], "metadata": {"papermill": {}}, "nbformat": 4, "nbformat_minor": 5}'


def _fake_executed(monkeypatch, text=EXECUTED, status="passed"):
    """papermill replaced by a write of `text`: what the run does with its folder is tested, not the lesson."""

    def execute(source, target, parameters, cwd, timeout_s=600):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(text)
        return status, "" if status == "passed" else "OSError: [Errno 28] No space left on device", 0.1

    monkeypatch.setattr(runner, "execute_with_papermill", execute)


# ---------------------------------------------------------------- the manifest


def test_a_file_written_and_unchanged_may_be_overwritten_a_changed_or_foreign_one_may_not(tmp_path):
    mine, theirs = tmp_path / "mine.md", tmp_path / "theirs.md"
    mine.write_text("ours")
    theirs.write_text("a user's")
    files.Manifest(tmp_path).record([mine])
    manifest = files.Manifest(tmp_path)  # read back from the folder
    assert manifest.may_overwrite(mine) and not manifest.may_overwrite(theirs)
    assert manifest.may_overwrite(theirs, "a user's"), "identical content loses nothing"
    assert manifest.may_overwrite(tmp_path / "new.md")
    mine.write_text("ours, annotated")
    assert not files.Manifest(tmp_path).may_overwrite(mine)


def test_a_file_left_pending_by_a_killed_or_disk_full_write_is_the_tools_own(tmp_path):
    target = tmp_path / "02.ipynb"
    files.Manifest(tmp_path).pending([target])
    target.write_text('{"cells": [')  # truncated, never recorded
    assert files.Manifest(tmp_path).may_overwrite(target)


def test_the_manifest_is_in_the_output_folder_with_content_hashes(tmp_path):
    files.write_owned(tmp_path / "out", {"a.txt": "A", "sub/b.txt": "B"}, "--out")
    data = json.loads((tmp_path / "out" / files.MANIFEST).read_text())
    assert data["files"] == {"a.txt": files.content_hash("A"), "sub/b.txt": files.content_hash("B")}


def test_write_owned_refuses_naming_every_foreign_file_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    files.write_owned(out, {"a.txt": "A"}, "--out")
    (out / "a.txt").write_text("A, with my note")
    (out / "b.txt").write_text("mine")
    with pytest.raises(files.WouldOverwriteWork, match=r"\(a.txt, b.txt\): a learner's work\?"):
        files.write_owned(out, {"a.txt": "A2", "b.txt": "B", "c.txt": "C"}, "--out")
    assert (out / "a.txt").read_text() == "A, with my note" and not (out / "c.txt").exists()


@pytest.mark.parametrize("text", ["{not json", '{"files": 3}', '{"files": {"a": 5}}', "\xff\xfe"])
def test_a_corrupt_manifest_is_named_in_one_line(tmp_path, text):
    (tmp_path / files.MANIFEST).write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=rf"{files.MANIFEST} is not a readable list of written files .*delete it"):
        files.Manifest(tmp_path)


# ---------------------------------------------------------------- run --out: a learner's annotated copy


def test_a_run_replaces_its_own_output_but_not_a_learners_annotated_copy(tmp_path, monkeypatch, capsys):
    _fake_executed(monkeypatch)
    out = tmp_path / "out"
    argv = ["run", "00", "--no-floor", "--out", str(out)]
    assert cli.main(argv) == 0
    assert cli.main(argv) == 0, "a run replaces what it wrote"
    executed = out / LESSON0.notebook.name
    annotated = executed.read_text().replace('"cells": []', '"cells": [], "my_note": "read again"')
    executed.write_text(annotated)  # still carries papermill's metadata: the old rule took it for the run's own
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"({LESSON0.notebook.name}): a learner's work?" in err and len(err.strip().splitlines()) == 1
    assert executed.read_text() == annotated


def test_after_a_disk_full_run_its_own_truncated_notebook_does_not_block_the_rerun(tmp_path, monkeypatch):
    _fake_executed(monkeypatch, text='{"cells": [', status="failed")  # what a full disk leaves of papermill's write
    out = tmp_path / "out"
    assert cli.main(["run", "00", "--no-floor", "--out", str(out)]) == 1
    _fake_executed(monkeypatch)
    assert cli.main(["run", "00", "--no-floor", "--out", str(out)]) == 0


def test_a_report_a_user_wrote_is_refused_and_an_earlier_report_is_replaced(tmp_path, monkeypatch, capsys):
    _fake_executed(monkeypatch)
    out = tmp_path / "out"
    (tmp_path / "notes.md").write_text("# Course run notes I keep\n")  # looks like a report, in a manifest folder
    files.write_file_owned(tmp_path / "other.md", "x", "--report")
    assert cli.main(["run", "00", "--no-floor", "--out", str(out), "--report", str(tmp_path / "notes.md")]) == 2
    assert "verlstudy did not write it" in capsys.readouterr().err
    assert cli.main(["run", "00", "--no-floor", "--out", str(out), "--report", str(tmp_path / "r.md")]) == 0
    assert cli.main(["run", "00", "--no-floor", "--out", str(out), "--report", str(tmp_path / "r.md")]) == 0


# ---------------------------------------------------------------- site --out: a user's own pages


def test_a_site_build_leaves_a_users_own_page_alone_and_rebuilds_its_own(tmp_path, capsys):
    from verlstudy.course import site

    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("<html>my own index</html>")
    assert cli.main(["site", "00", "--out", str(out)]) == 2
    assert "(index.html)" in capsys.readouterr().err
    assert (out / "index.html").read_text() == "<html>my own index</html>"
    (out / "index.html").unlink()
    site.build_site(out, lessons=[LESSON0])
    site.build_site(out, lessons=[LESSON0])  # its own pages, unchanged: rebuilt
    page = out / "student" / "index.html"
    page.write_text(page.read_text() + "<!-- my annotation -->")
    with pytest.raises(files.WouldOverwriteWork, match=r"student/index.html"):
        site.build_site(out, lessons=[LESSON0])


# ---------------------------------------------------------------- the forbidden targets, command by command


def _forbidden_cases():
    notebooks, data = registry.notebooks_dir(), registry.data_dir()
    package = Path(files.__file__).resolve().parents[1]
    src = resources.checkout_root() / "src" if resources.checkout_root() else package
    return [
        (["run", "00", "--out", str(notebooks)], "course's own notebooks/ folder"),
        (["run", "00", "--out", str(data / "x")], "course's own data/ folder"),
        (["run", "00", "--out", str(src / "out")], "src/ folder"),
        (["run", "00", "--out", str(package / "course")], "installed verlstudy package"),
        (["run", "00", "--out", "."], "is the current folder"),
        (["run", "00", "--report", "/proc/self/fdinfo/r.md"], "in /proc, a system folder"),
        (["run", "00", "--junit", str(notebooks / "j.xml")], "course's own notebooks/ folder"),
        (["student", "00", "--out", str(notebooks / "py")], "course's own notebooks/ folder"),
        (["student", "00", "--out", str(data / "student")], "course's own data/ folder"),
        (["student", "00", "--out", ""], "--out is empty"),
        (["student", "00", "--out", "."], "is the current folder"),
        (["init", str(notebooks)], "course's own notebooks/ folder"),
        (["init", ""], "the folder name is empty"),
        (["init", "."], "is the current folder"),
        (["progress", "{learner}", "--build", str(notebooks)], "course's own notebooks/ folder"),
        (["progress", "{learner}", "--build", "."], "is the current folder"),
        (["progress", "{learner}", "--csv", str(data / "p.csv")], "course's own data/ folder"),
        (["site", "00", "--out", ""], "--out is empty"),
        (["site", "00", "--out", str(data / "site")], "course's own data/ folder"),
    ]


@pytest.mark.parametrize(("argv", "message"), _forbidden_cases())
def test_every_writing_command_refuses_every_forbidden_target_in_one_line(argv, message, tmp_path, monkeypatch, capsys):
    learner = tmp_path / "ada"
    learner.mkdir()
    (learner / LESSON0.notebook.name).write_text("{}")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    _no_kernel(monkeypatch)
    guarded = [registry.notebooks_dir(), registry.data_dir(), Path(files.__file__).resolve().parents[1], work]
    before = {p: sorted(q.relative_to(p) for q in p.rglob("*")) for p in guarded}
    assert cli.main([a.replace("{learner}", str(learner)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert {p: sorted(q.relative_to(p) for q in p.rglob("*")) for p in guarded} == before


def test_the_checkout_root_is_refused_as_an_output_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = resources.checkout_root()
    if root is None:
        pytest.skip("an installed package has no checkout")
    with pytest.raises(ValueError, match="is the course checkout itself"):
        files.check_target(root, "--out")


def test_refresh_refuses_to_rewrite_an_installed_packages_notebooks(monkeypatch, capsys):
    monkeypatch.setattr(resources, "checkout_root", lambda: None)
    monkeypatch.setattr("verlstudy.course.twins.refresh", lambda *a, **k: pytest.fail("nothing may be rewritten"))
    assert cli.main(["refresh", "00"]) == 2
    assert "works in a checkout only" in capsys.readouterr().err


# ---------------------------------------------------------------- report paths that could block


def _within(seconds, fn, *args):
    """Call fn in a thread; fail if it blocks (a hang guard: the check itself takes milliseconds)."""
    outcome = {}

    def call():
        try:
            outcome["value"] = fn(*args)
        except Exception as e:  # handed back to the test
            outcome["error"] = e

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{fn.__name__} blocked (it must not read a pipe or a device)")
    return outcome


def test_a_pipe_as_a_report_path_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "report.md"
    os.mkfifo(fifo)
    outcome = _within(120, files.check_report_paths, {"--report": fifo})
    assert "not a regular file" in str(outcome.get("error"))


@pytest.mark.parametrize("device", ["/dev/stdout", "/dev/null"])
def test_a_device_as_a_report_path_is_refused_before_a_kernel_starts(device, tmp_path, monkeypatch, capsys):
    _no_kernel(monkeypatch)
    outcome = _within(120, cli.main, ["run", "00", "--out", str(tmp_path / "out"), "--report", device])
    assert outcome.get("value") == 2
    assert "system folder" in capsys.readouterr().err


# ---------------------------------------------------------------- corrupt inputs are named in one line


def _corrupt_course(tmp_path, monkeypatch, text="{not json"):
    course = tmp_path / "course"
    course.mkdir()
    for lesson in registry.LESSONS:
        (course / lesson.notebook.name).write_text(text)
    monkeypatch.setattr(registry.Lesson, "notebook", property(lambda self: course / f"{self.stem}.ipynb"))
    return course


@pytest.mark.parametrize("argv", [["student", "00", "--out", "{tmp}/s"], ["init", "{tmp}/mine"]])
def test_student_and_init_name_a_corrupt_lesson_notebook(argv, tmp_path, monkeypatch, capsys):
    _corrupt_course(tmp_path, monkeypatch)
    assert cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "00_start_here.ipynb is not a valid notebook" in err and len(err.strip().splitlines()) == 1


def test_a_non_utf8_notebook_is_named(tmp_path):
    bad = tmp_path / "03_x.ipynb"
    bad.write_bytes(b"\xff\xfe{")
    with pytest.raises(ValueError, match=r"03_x.ipynb is not a valid notebook"):
        files.read_notebook(bad)


@pytest.mark.parametrize("text", ["{", '{"lessons": [{"status": "passed"}]}', "[]", '{"floor": 3, "lessons": []}'])
def test_a_corrupt_results_file_is_named(tmp_path, text):
    path = tmp_path / "run.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"run.json is not a results file written by `verlstudy run --results`"):
        reports.read_results(path)


# ---------------------------------------------------------------- progress: learners never merge, builds are guarded


def test_two_learners_with_the_same_folder_name_are_both_kept(tmp_path):
    for group in ("monday", "tuesday"):
        (tmp_path / group / "ada").mkdir(parents=True)
        (tmp_path / group / "ada" / LESSON0.notebook.name).write_text("{}")
    found = progress.learner_folders([tmp_path / "monday" / "ada", tmp_path / "tuesday" / "ada"])
    assert found == {"ada": tmp_path / "monday" / "ada", "tuesday/ada": tmp_path / "tuesday" / "ada"}
    targets = {progress._target(tmp_path / "b", name, LESSON0.notebook) for name in found}
    assert len(targets) == 2, "their executed copies must not overwrite each other"


def test_the_current_folder_as_a_learner_has_its_own_name(tmp_path, monkeypatch):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / LESSON0.notebook.name).write_text("{}")
    monkeypatch.chdir(tmp_path / "ada")
    assert list(progress.learner_folders([Path(".")])) == ["ada"]


def test_progress_never_overwrites_a_file_it_did_not_write_in_its_build_folder(tmp_path, monkeypatch):
    _no_kernel(monkeypatch)
    learner, build = tmp_path / "ada", tmp_path / "build"
    learner.mkdir()
    (learner / LESSON0.notebook.name).write_text("{}")
    (build / "ada").mkdir(parents=True)
    (build / "ada" / LESSON0.notebook.name).write_text("my notes")
    with pytest.raises(files.WouldOverwriteWork, match=rf"ada/{LESSON0.notebook.name}"):
        progress.collect([learner], build)


@pytest.mark.slow
def test_one_learners_endless_loop_is_stopped_after_the_notebook_timeout(tmp_path):
    learner = tmp_path / "ada"
    learner.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("while True:\n    pass")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, learner / LESSON0.notebook.name)
    rows = progress.collect([learner], tmp_path / "build", timeout_s=3)
    broken = [r for r in rows if r.exercise == "-"]
    assert [r.verdict for r in broken] == ["broken notebook"]
    assert "the notebook ran longer than 3 s and was stopped" in broken[0].message


# ---------------------------------------------------------------- options that could hang or mean nothing


@pytest.mark.parametrize("cases", ["0", "100001"])
def test_verify_upstream_cases_are_bounded(cases, capsys):
    assert cli.main(["verify-upstream", "--cases", cases]) == 2
    assert "--cases must be 1 to 100000" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
@pytest.mark.parametrize("command", [["run", "00"], ["progress", "x"]])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(command, value, monkeypatch, capsys):
    _no_kernel(monkeypatch)
    assert cli.main([*command, "--timeout", value]) == 2
    assert "--timeout must be a number of seconds above 0" in capsys.readouterr().err


# ---------------------------------------------------------------- tester sweep 5 (issue 43): folders, links, names


def test_the_root_folder_and_the_home_folder_are_never_a_writing_commands_folder(tmp_path, monkeypatch):
    # I9: `init /` wrote README.txt, notebooks/ and student/ into the filesystem's root
    with pytest.raises(ValueError, match="is the root folder: name a new folder inside it"):
        files.check_target("/", "--out")
    with pytest.raises(ValueError, match="is in the root folder"):
        files.check_target("/report.md", "--report", folder=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ValueError, match="is your home folder"):
        files.check_target(tmp_path, "--out")
    assert files.check_target(tmp_path / "verlstudy", "--out") == tmp_path / "verlstudy"
    assert files.check_target(tmp_path / "report.md", "--report", folder=False) == tmp_path / "report.md"
    for system in ("/etc/verlstudy", "/boot/x", "/lib/x"):
        with pytest.raises(ValueError, match="a system folder"):
            files.check_target(system, "--out")


@pytest.mark.parametrize("argv", [["init", "/"], ["run", "00", "--out", "/"], ["student", "00", "--out", "/"]])
def test_every_writing_command_refuses_the_root_folder_in_one_line(argv, monkeypatch, capsys):
    _no_kernel(monkeypatch)
    monkeypatch.setattr(files, "write_all", lambda *a, **k: pytest.fail("nothing may be written into /"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "/ is the root folder" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv", [["init", "{link}"], ["run", "00", "--out", "{link}"]])
def test_a_dangling_link_as_the_folder_is_named_as_one(argv, tmp_path, monkeypatch, capsys):
    # I8, O6: "a file is where a folder is needed" (exit 1) for a symbolic link to nothing
    _no_kernel(monkeypatch)
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "gone")
    assert cli.main([a.replace("{link}", str(link)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert f"{link} is a symbolic link to {tmp_path / 'gone'}, which does not exist" in err, err
    assert not (tmp_path / "gone").exists()


def test_a_folder_or_a_link_where_a_file_goes_is_named_as_what_it_is(tmp_path, monkeypatch, capsys):
    # O8: a folder was "1 file(s) ... a learner's work?"; O9: a link out of the folder was pathlib's ValueError text
    _no_kernel(monkeypatch)
    name = LESSON0.notebook.name
    (tmp_path / "o8" / name).mkdir(parents=True)
    assert cli.main(["run", "00", "--out", str(tmp_path / "o8")]) == 2
    err = capsys.readouterr().err
    assert f"has a folder where this writes a file ({name}/): move it away" in err, err
    mine = tmp_path / "mywork.ipynb"
    mine.write_text("my notebook")
    (tmp_path / "o9").mkdir()
    (tmp_path / "o9" / name).symlink_to(mine)
    assert cli.main(["run", "00", "--out", str(tmp_path / "o9")]) == 2
    err = capsys.readouterr().err
    assert f"has a link where this writes a file ({name} -> {mine}): verlstudy never writes through a link" in err
    assert "subpath" not in err and len(err.strip().splitlines()) == 1
    assert mine.read_text() == "my notebook"


@pytest.mark.parametrize("flag", ["--report", "--junit", "--results"])
@pytest.mark.parametrize("name", ["run-record.json", files.MANIFEST])
def test_a_report_never_takes_the_name_of_verlstudys_own_bookkeeping(flag, name, tmp_path, monkeypatch, capsys):
    # Y10: --report OUT/run-record.json was accepted; the run record then overwrote the report
    _no_kernel(monkeypatch)
    out = tmp_path / "y10"
    assert cli.main(["run", "00", "--out", str(out), flag, str(out / name)]) == 2
    err = capsys.readouterr().err
    assert f"{flag} {out / name} is " in err and "name another file for the report" in err, err
    assert not out.exists()


def test_a_folder_is_staged_inside_itself_and_a_failure_names_it(tmp_path, monkeypatch):
    # I5: a read-only parent was named through a hidden staging folder (.course-h2inpe1k) the user never asked for
    out = tmp_path / "course"
    seen = []
    real_mkdtemp = files.tempfile.mkdtemp
    monkeypatch.setattr(files.tempfile, "mkdtemp", lambda **k: seen.append(k["dir"]) or real_mkdtemp(**k))
    files.write_all(out, {"a.txt": "a"})
    assert seen == [out] and sorted(p.name for p in out.iterdir()) == ["a.txt"]
    real_mkdir = Path.mkdir

    def read_only(self, *args, **kwargs):
        if self == tmp_path / "ro" / "course":
            raise OSError(30, "Read-only file system", str(self))
        return real_mkdir(self, *args, **kwargs)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(Path, "mkdir", read_only)
    with pytest.raises(OSError) as raised:
        files.write_all(tmp_path / "ro" / "course", {"a.txt": "a"})
    assert raised.value.filename == str(tmp_path / "ro" / "course")
    assert list((tmp_path / "ro").iterdir()) == []


def test_a_manifest_of_the_wrong_json_shape_is_named_without_pythons_words(tmp_path):
    # D4: '[]' was "(list indices must be integers or slices, not str)"
    for text in ("[]", "5", '{"other": 1}'):
        (tmp_path / files.MANIFEST).write_text(text)
        with pytest.raises(ValueError, match=r"\(not a JSON object with a 'files' map\); delete it and rerun"):
            files.Manifest(tmp_path)
