"""A full disk costs nothing that was there: the old file stays whole, the user gets one line and exit 1."""

import errno
import os
from pathlib import Path

import pytest

from verlstudy.course import cli, files, run_command


def _full_disk(monkeypatch, after_bytes: int = 0) -> None:
    """Path.write_text writes `after_bytes` of the text, then fails with ENOSPC, as a full disk does."""
    real = Path.write_text

    def write_text(self, text, *args, **kwargs):
        real(self, text[:after_bytes], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", write_text)


def test_a_file_written_on_a_full_disk_keeps_its_old_text_and_no_partial_file(tmp_path, monkeypatch):
    report = tmp_path / "report.md"
    report.write_text("yesterday's report\n")
    _full_disk(monkeypatch, after_bytes=5)
    with pytest.raises(files.WriteFailed, match=r"disk full while writing .*report.md: .*report.md was left as it"):
        files.write_text(report, "today's report, much longer\n")
    monkeypatch.undo()
    assert report.read_text() == "yesterday's report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_a_whole_write_replaces_the_file_and_keeps_ordinary_permissions(tmp_path):
    new = files.write_text(tmp_path / "sub" / "junit.xml", "<testsuites/>\n")
    assert new.read_text() == "<testsuites/>\n"
    umask = os.umask(0)
    os.umask(umask)
    assert new.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600
    new.chmod(0o640)
    files.write_text(new, "again\n")
    assert new.stat().st_mode & 0o777 == 0o640


def test_a_folder_written_on_a_full_disk_is_left_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / "student"
    out.mkdir()
    (out / "00_start_here.ipynb").write_text("learner's work")
    _full_disk(monkeypatch)
    with pytest.raises(files.WriteFailed, match=f"nothing in {out} was changed"):
        files.write_all(out, {"00_start_here.ipynb": "new", "01_x.ipynb": "new"})
    monkeypatch.undo()
    assert [p.name for p in out.iterdir()] == ["00_start_here.ipynb"]
    assert (out / "00_start_here.ipynb").read_text() == "learner's work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["student"]  # no staging folder left behind


def test_disk_full_is_found_behind_the_errors_libraries_wrap_it_in():
    try:
        try:
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
        except OSError as inner:
            raise RuntimeError("nbformat could not write") from inner
    except RuntimeError as outer:
        assert files.is_disk_full(outer)
    assert not files.is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not files.is_disk_full(None)


def test_the_cli_says_disk_full_in_one_line_and_exits_1(tmp_path, monkeypatch, capsys):
    _full_disk(monkeypatch)
    assert cli.main(["student", "00", "--out", str(tmp_path / "student")]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("verlstudy student: disk full while writing ")
    assert "Traceback" not in captured.err and len(captured.err.strip().splitlines()) == 1


def test_the_run_report_is_printed_before_it_is_written_so_a_full_disk_still_shows_it(tmp_path, monkeypatch, capsys):
    from verlstudy.course import reports

    monkeypatch.setattr(reports, "report_markdown", lambda *a, **k: "| lesson | status |\n")
    (tmp_path / "report.md").write_text("old\n")
    _full_disk(monkeypatch)
    with pytest.raises(files.WriteFailed):
        run_command._write_reports(None, tmp_path, tmp_path / "report.md", None, None, [], None)
    monkeypatch.undo()
    assert capsys.readouterr().out == "| lesson | status |\n"
    assert (tmp_path / "report.md").read_text() == "old\n"
