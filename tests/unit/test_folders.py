"""Where a workflow may write (configuration/folders.py): never /, $HOME, a system folder, or a folder of
others' files, judged where a link points; one checkout's runs at a time in a results folder."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from configuration import CHECKOUT, folders
from configuration.load import ConfigError


def check(tmp_path: Path, **config: str) -> None:
    folders.check({"results": str(tmp_path / "r"), "figures": str(tmp_path / "f"), **config}, tmp_path, "cfg")


@pytest.mark.parametrize(("value", "says"), [
    ("/", "is the file system's root"),
    ("/etc", "is inside the system folder /etc"),
    ("/usr/local/x", "is inside the system folder /usr"),
    ("/proc/self", "is inside the system folder /proc"),
])
def test_system_folders_are_refused(tmp_path: Path, value: str, says: str) -> None:
    for kind in ("results", "figures"):
        with pytest.raises(ConfigError) as err:
            check(tmp_path, **{kind: value})
        assert f"cfg: field '{kind}': {value!r}" in str(err.value) and says in str(err.value)
        assert "Fix:" in str(err.value) and "\n" not in str(err.value)


def test_home_itself_is_refused_a_folder_in_it_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="is your home folder itself"):
        check(tmp_path, results=str(tmp_path))
    check(tmp_path, results=str(tmp_path / "results"))


def test_a_folder_of_other_files_is_refused_also_through_a_link(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("")
    with pytest.raises(ConfigError, match=r"holds files that are not this project's \(thesis.tex\)"):
        check(tmp_path, results="mine")
    (tmp_path / "link").symlink_to(mine)
    with pytest.raises(ConfigError, match=r"'link' \(.*/mine\) holds files"):
        check(tmp_path, figures="link")
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="is a file"):
        check(tmp_path, results="file")


def test_new_empty_marked_or_written_folders_are_accepted(tmp_path: Path) -> None:
    check(tmp_path)                                        # neither exists
    for name in ("r", "f"):
        (tmp_path / name).mkdir()
    check(tmp_path)                                        # both empty
    (tmp_path / "r" / "quick").mkdir()
    (tmp_path / "r" / "notes.txt").write_text("")
    (tmp_path / "f" / "collateral" / "smoke").mkdir(parents=True)
    check(tmp_path)                                        # what runs write
    marked = tmp_path / "marked"
    folders.mark("results", marked)
    (marked / "other").write_text("")
    check(tmp_path, results="marked", figures="marked2")
    folders.check({"results": "results", "figures": "figures"}, CHECKOUT, "cfg")   # this checkout's own
    with pytest.raises(ConfigError, match="is this checkout itself"):
        folders.check({"results": "results", "figures": "."}, CHECKOUT, "cfg")


def test_a_second_checkout_s_claim_is_refused_while_the_first_holds_one(tmp_path: Path) -> None:
    """The claim lives as long as its process (an flock): here a child holds the first."""
    results = tmp_path / "results" / "smoke"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, pathlib
        from configuration import folders
        folders.claim(pathlib.Path({str(results)!r}), pathlib.Path({str(tmp_path / 'a')!r}))
        print("held", flush=True)
        sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=CHECKOUT)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    try:
        with pytest.raises(ConfigError, match=rf"being written by the workflow of another checkout \(checkout "
                                              rf"{tmp_path / 'a'}, pid {holder.pid}\).*Fix: wait"):
            folders.claim(results, tmp_path / "b")
        folders.claim(results, tmp_path / "a")               # the same checkout's other run may
        folders.release()
    finally:
        holder.communicate("")
    folders.claim(results, tmp_path / "b")                   # the first run has ended
    folders.release()


def test_check_config_judges_a_config_file_s_folders_too(tmp_path: Path) -> None:
    """`tcprepro check-config mine.yaml`, before `snakemake --configfile mine.yaml`."""
    from tcprepro.cli import main

    mine = tmp_path / "mine.yaml"
    mine.write_text("results: /\n")
    assert main(["check-config", str(mine)]) == 2
    mine.write_text(f"results: {tmp_path / 'new'}\nfigures: {tmp_path / 'figs'}\n")
    assert main(["check-config", str(mine)]) == 0


def test_a_path_snakemake_or_the_file_system_would_misread_is_refused(tmp_path: Path) -> None:
    """A NUL or newline, a brace (a wildcard in Snakemake's outputs), a name too long, a loop of links:
    one line naming the field, never a traceback."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for value, says in [(str(tmp_path / "a\0b"), "holds a control character"),
                        (str(tmp_path / "a\nb"), "holds a control character"),
                        (str(tmp_path / "{paper}"), "holds a brace"),
                        (str(tmp_path / ("x" * 300)), "cannot be looked up (File name too long)"),
                        (str(tmp_path / "loop"), "cannot be looked up (Symlink loop")]:
        for kind in ("results", "figures"):
            with pytest.raises(ConfigError) as err:
                check(tmp_path, **{kind: value})
            assert f"cfg: field '{kind}': {value!r} {says}" in str(err.value) and "\n" not in str(err.value)


def test_results_inside_figures_or_figures_inside_a_profile_s_trials_is_refused(tmp_path: Path) -> None:
    """A run empties figures/<paper>/<profile>/ and removes trial folders before remaking them."""
    with pytest.raises(ConfigError, match=r"field 'results': .*/f/wlan is inside figures .*/f, whose"):
        check(tmp_path, results="f/wlan", figures="f")
    with pytest.raises(ConfigError, match=r"field 'figures': .*/r/smoke/wlan is inside .*/r/smoke, whose trial"):
        check(tmp_path, results="r", figures="r/smoke/wlan")
    check(tmp_path, results="out", figures="out")             # side by side in one folder
    check(tmp_path, results="out", figures="out/figures")     # beside the profiles' folders
