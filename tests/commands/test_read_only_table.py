"""`plain_table` prints, without rich, exactly the lines rich prints for a borderless table in a pipe, or declines."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from strawpot.commands import _read_only
from strawpot.commands._read_only import PIPED_WIDTH, plain_table

# printable ASCII but the backslash (test_a_backslash_in_a_cell_prints_as_rich_prints has those)
PRINTABLE = st.characters(min_codepoint=0x20, max_codepoint=0x7E, blacklist_characters="\\")
CELL = st.text(PRINTABLE, max_size=12) | st.sampled_from(["", " ", "[", "[b]x[/b]", "a  b", " x ", "[/]", "[#f00]"])
HEADER = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"), min_size=1, max_size=10)


def rich_lines(columns: list[str], rows: list[list[str]], *, pad_edge: bool) -> list[str]:
    """What rich prints for the table on strawpot's stdout console in a pipe, as `print_table` builds it."""
    from rich.markup import escape
    from rich.table import Table

    from strawpot.console import new_console

    table = Table(*columns, box=None, pad_edge=pad_edge)
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # a pipe: new_console gives rich its piped width (1000)
        console = new_console(stderr=False)
        assert console.width == PIPED_WIDTH and not console.is_terminal
        console.print(table)
    return out.getvalue().split("\n")[:-1]


def printed_by_rich(columns: list[str], rows: list[list[str]], *, pad_edge: bool,
                    monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What `print_table` prints in a pipe when it takes its rich path (as on a terminal, COLUMNS or forced colour)."""
    with monkeypatch.context() as patched:
        patched.setattr(_read_only, "_plain_stdout", lambda: False)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            _read_only.print_table(columns, rows, pad_edge=pad_edge)
    return out.getvalue().split("\n")[:-1]


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "TERM"):
        monkeypatch.delenv(name, raising=False)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(HEADER, min_size=n, max_size=n), st.lists(st.lists(CELL, min_size=n, max_size=n), max_size=6))),
    st.booleans())
@example((["kind", "name"], [["", ""], ["skill", "[x]"]]), True)
@example((["run"], [["  "], [""]]), False)
def test_the_plain_table_is_what_rich_prints(table: tuple[list[str], list[list[str]]], pad_edge: bool) -> None:
    """The lines rich prints, by the table's own escaping and by `print_table`'s rich path."""
    columns, rows = table
    plain = plain_table(columns, rows, pad_edge=pad_edge)
    assert plain is not None, "a printable ASCII table left to rich"
    assert plain == rich_lines(columns, rows, pad_edge=pad_edge)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert plain == printed_by_rich(columns, rows, pad_edge=pad_edge, monkeypatch=monkeypatch)


@pytest.mark.parametrize("cell", ["a\\", "\\", "\\[x", "\\[b]x", "x\\\\", "C:\\Users\\", "a\\b"])
@pytest.mark.parametrize("pad_edge", [False, True])
def test_a_backslash_in_a_cell_prints_as_rich_prints(cell: str, pad_edge: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A backslash is printable ASCII, and anyone's text (a summary, a path) may end with one or put one before '[':
    rich's `escape()` then adds a backslash that rich prints, or leaves one that rich reads as an escape and drops.
    Either plain_table declines such a cell, or (better) both paths print the cell as it is."""
    columns, rows = ["kind", "name"], [["skill", cell], ["role", "x"]]
    plain = plain_table(columns, rows, pad_edge=pad_edge)
    if plain is not None:
        assert plain == printed_by_rich(columns, rows, pad_edge=pad_edge, monkeypatch=monkeypatch)


@pytest.mark.parametrize("pad_edge", [False, True])
def test_a_table_as_wide_as_a_pipe_is_plain_and_a_wider_one_is_richs(pad_edge: bool) -> None:
    edges = 2 if pad_edge else 0
    for total in (PIPED_WIDTH - 1, PIPED_WIDTH):  # two columns and the two spaces between them
        first = total - edges - 2 - 3
        rows = [["a" * first, "bcd"]]
        plain = plain_table(["x", "y"], rows, pad_edge=pad_edge)
        assert plain is not None and len(plain[1]) == total
        assert plain == rich_lines(["x", "y"], rows, pad_edge=pad_edge)
    wider = [["a" * (PIPED_WIDTH - edges - 2 - 3 + 1), "bcd"]]
    assert plain_table(["x", "y"], wider, pad_edge=pad_edge) is None
    edge = " " if pad_edge else ""
    unfolded = [edge + "x".ljust(len(wider[0][0])) + "  y  " + edge, edge + wider[0][0] + "  bcd" + edge]
    assert rich_lines(["x", "y"], wider, pad_edge=pad_edge) != unfolded  # rich folds it its own way


@pytest.mark.parametrize("cell", ["é", "ファイル", "\t", "\x7f", "a\nb", "\x1b[31m", "\u200b", "\x00"])
@pytest.mark.parametrize("where", ["cell", "header"])
def test_a_cell_that_is_not_printable_ascii_is_left_to_rich(cell: str, where: str) -> None:
    columns, rows = (["kind", cell], [["a", "b"]]) if where == "header" else (["kind", "name"], [["a", cell]])
    assert plain_table(columns, rows, pad_edge=False) is None
    assert plain_table(columns, rows, pad_edge=True) is None


def test_no_rows_is_the_header_alone() -> None:
    assert plain_table(["kind", "name"], [], pad_edge=True) == [" kind  name "] == rich_lines(
        ["kind", "name"], [], pad_edge=True)
