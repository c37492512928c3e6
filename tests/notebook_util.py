"""Real notebooks for the tests, written and validated by nbformat as Jupyter writes them."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Union

import nbformat
from ecosystem_util import REMOTE_DATASET

Cell = Union[str, tuple[str, str]]  # code, or (cell type, source)

DATASET_CELL = REMOTE_DATASET.rstrip("\n")  # as a cell's source: no final newline
LOADER_CELL = textwrap.dedent('''\
    from torch.utils.data import DataLoader

    loader = DataLoader(RemoteImages(urls), batch_size=2, num_workers=4)''')


def write_notebook(path: Path, cells: list[Cell], minor: int = 5, outputs: bool = True) -> Path:
    """A v4 notebook (4.`minor`) with a markdown title, the cells given (a code cell gets an
    execution count and, with `outputs`, a stream output), kernel metadata; validated."""
    notebook = nbformat.v4.new_notebook()
    notebook.nbformat_minor = minor
    notebook.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                       "name": "python3"}
    notebook.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    notebook.cells.append(nbformat.v4.new_markdown_cell("# Remote images"))
    for count, cell in enumerate(cells, start=1):
        kind, source = ("code", cell) if isinstance(cell, str) else cell
        if kind == "code":
            code = nbformat.v4.new_code_cell(source, execution_count=count)
            if outputs:
                code.outputs.append(nbformat.v4.new_output("stream", name="stdout",
                                                           text=f"ran cell {count}\n"))
            notebook.cells.append(code)
        elif kind == "markdown":
            notebook.cells.append(nbformat.v4.new_markdown_cell(source))
        else:
            notebook.cells.append(nbformat.v4.new_raw_cell(source))
    if minor < 5:
        for c in notebook.cells:
            c.pop("id", None)
    nbformat.validate(notebook)
    nbformat.write(notebook, str(path))
    return path


def read_valid(path: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(notebook)
    return notebook


def code_of(path: Path) -> str:
    """The notebook's code cells joined, as a script would run them."""
    notebook = read_valid(path)
    return "\n\n".join(c.source for c in notebook.cells if c.cell_type == "code") + "\n"
