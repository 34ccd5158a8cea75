"""The output module (``ragmeter.core.files``): what a command may write, and how it writes it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ragmeter.core.errors import ConfigError
from ragmeter.core.files import Outputs, Target, atomic_write_text, complete_jsonl_rows, writing


def test_an_input_is_refused_by_any_path_to_it(tmp_path: Path) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text("{}\n", encoding="utf-8")
    (tmp_path / "hard.jsonl").hardlink_to(data)
    (tmp_path / "soft.jsonl").symlink_to(data)
    outputs = Outputs([data], overwrite=True)
    for other in ("in.jsonl", "hard.jsonl", "soft.jsonl", "sub/../in.jsonl"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(ConfigError, match=r"--html .* is an input of this command"):
            outputs.file(tmp_path / other, flag="--html")
    assert data.read_text(encoding="utf-8") == "{}\n"


def test_an_existing_file_needs_overwrite(tmp_path: Path) -> None:
    mine = tmp_path / "people.csv"
    mine.write_text("filled labels", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^-o .*people.csv exists: pass --overwrite to replace it"):
        Outputs().file(mine, flag="-o")
    target = Outputs(overwrite=True).file(mine, flag="-o")
    assert target.replace and not target.stream


def test_a_file_this_command_made_may_be_written_again(tmp_path: Path) -> None:
    outputs = Outputs()
    target = outputs.file(tmp_path / "a.html", flag="--html")
    atomic_write_text(target, "one")
    assert outputs.file(tmp_path / "a.html", flag="--html").replace
    atomic_write_text(tmp_path / "a.html", "two")
    assert (tmp_path / "a.html").read_text(encoding="utf-8") == "two"


def test_a_symlink_is_followed_and_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.html"
    real.write_text("old", encoding="utf-8")
    os.chmod(real, 0o640)
    link = tmp_path / "link.html"
    link.symlink_to(real)
    target = Outputs(overwrite=True).file(link, flag="--html")
    atomic_write_text(target, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # a replaced file keeps its mode
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "made.html")
    atomic_write_text(Outputs().file(dangling, flag="--html"), "made")
    assert dangling.is_symlink() and (tmp_path / "made.html").read_text(encoding="utf-8") == "made"


def test_special_files_are_refused_unless_streamed_to(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"--html .*fifo is a FIFO, not a regular file"):
        Outputs(overwrite=True).file(fifo, flag="--html", stream=True)
    with pytest.raises(ConfigError, match=r"is a folder: give a file name"):
        Outputs().file(tmp_path, flag="--html")
    void = tmp_path / "void"
    void.symlink_to(os.devnull)  # the null device by a name of the test's own: a bug would replace the link
    null = Outputs().file(void, flag="--html", stream=True)
    assert null.stream
    atomic_write_text(null, "into the void")
    assert void.is_symlink() and stat.S_ISCHR(void.stat().st_mode)  # still the device, not a file
    with pytest.raises(ConfigError, match=r"^-o .*void is a stream .*, not a regular file: give a file name"):
        Outputs(overwrite=True).file(void, flag="-o")  # this output is never a stream


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("before", encoding="utf-8")
    with pytest.raises(RuntimeError, match="midway"), writing(Target.of(path)) as temporary:
        temporary.write_text("half", encoding="utf-8")
        raise RuntimeError("midway")
    assert path.read_text(encoding="utf-8") == "before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_new_file_that_appears_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "new.html"
    target = Outputs().file(path, flag="--html")  # checked: no file there
    path.write_text("someone else's", encoding="utf-8")
    with pytest.raises(ConfigError, match="was created by something else while ragmeter worked"):
        atomic_write_text(target, "ours")
    assert path.read_text(encoding="utf-8") == "someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.html"]


def test_an_unwritable_place_names_the_users_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^--html {blocker}/r.html cannot be written: {blocker} is a file"):
        Outputs().file(blocker / "r.html", flag="--html")


def test_complete_rows_say_which_line_was_bad_and_what_was_dropped(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"id": "1"}\n{"id": "2"}\nGARBAGE\n{"id": "4"}\n{"id": "5"}\n')
    kept = complete_jsonl_rows(path)
    assert kept.rows == [{"id": "1"}, {"id": "2"}]
    assert (kept.bad_line, kept.dropped) == (3, 3)
    assert kept.describe("items.jsonl") == (
        "line 3 of items.jsonl is not a complete JSON row: the 2 row(s) before "
        "it are kept, it and the 2 line(s) after it are dropped and scored again"
    )
    assert path.read_bytes() == b'{"id": "1"}\n{"id": "2"}\n'
    path.write_bytes(b'{"id": "1"}\n{"id": "2')  # torn by a crash: cut without a word
    torn = complete_jsonl_rows(path)
    assert torn.rows == [{"id": "1"}] and torn.describe("items.jsonl") is None
    path.write_bytes(b'{"id": "1"}\nGARBAGE\n')  # a whole bad last line is named
    assert complete_jsonl_rows(path).describe("items.jsonl") == (
        "line 2 of items.jsonl is not a complete JSON row: the 1 row(s) before it are kept, it and the 0 line(s) "
        "after it are dropped and scored again"
    )


def test_an_appended_output_keeps_what_the_file_held_and_refuses_inputs_and_fifos(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("step 1\n", encoding="utf-8")
    target = Outputs().file(summary, flag="--summary-file", append=True)
    atomic_write_text(target, "step 2\n")
    atomic_write_text(target, "step 3\n")
    assert summary.read_text(encoding="utf-8") == "step 1\nstep 2\nstep 3\n"
    fresh = Outputs().file(tmp_path / "new.md", flag="--summary-file", append=True)
    atomic_write_text(fresh, "made\n")
    assert (tmp_path / "new.md").read_text(encoding="utf-8") == "made\n"
    with pytest.raises(ConfigError, match="is an input"):
        Outputs([summary]).file(summary, flag="--summary-file", append=True)
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ConfigError, match="not a regular file"):
        Outputs().file(tmp_path / "pipe", flag="--summary-file", append=True)
