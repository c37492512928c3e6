"""Linking does work linear in the program, not in the number of paths through it.

Each project below links a dataset to its loader through chains that fan out: every helper
calls the next one twice (so a parameter has 2**depth paths back to the construction), an
attribute kept by a chain of holder classes, a factory returning a factory's result, and a
cycle of helpers calling each other. The recursive linker this replaced walked every path
(and cut them at depth 8, leaving deep datasets latent). The solver's own step counter
(`Project.flow_work`) must grow about as the project does, and every dataset must still be
linked to its loader (confirmed, WS101), however deep."""

from __future__ import annotations

import pytest

from workersafe.facts import FileFacts
from workersafe.link import Project
from workersafe.parse import file_facts
from workersafe.registry import DEFAULT_REGISTRY
from workersafe.rules import evaluate

DATA = """\
import requests
from torch.utils.data import Dataset


class Remote{k}(Dataset):
    def __init__(self, url):
        self.session = requests.Session()  # line 7

    def __getitem__(self, i):
        return self.session.get(i)
"""

LOADER = """\
from torch.utils.data import DataLoader


def run0(ds, workers):
    return DataLoader(ds, num_workers=workers)
"""


def _chain(depth: int) -> str:
    """run<i>(ds) calls run<i-1>(ds) twice; ping/pong call each other (a cycle); stages keep
    the dataset in an attribute and pass it to the previous stage twice; make<i> returns
    make<i-1>()."""
    out = ["from loader import *", "from data import *", ""]
    for i in range(1, depth + 1):
        out += [f"def run{i}(ds, workers):",
                f"    run{i - 1}(ds, workers)",
                f"    return run{i - 1}(ds, workers)", ""]
    out += ["def ping(ds, n):",
            "    if n:",
            "        pong(ds, n - 1)",
            "    return run0(ds, 2)", "",
            "def pong(ds, n):",
            "    return ping(ds, n)", ""]
    for i in range(depth):
        out += [f"class Stage{i}:",
                "    def __init__(self, ds):",
                "        self.ds = ds", "",
                "    def fit(self):",
                "        run0(self.ds, 2)" if i == 0 else f"        Stage{i - 1}(self.ds).fit()",
                f"        return Stage{i - 1 if i else 0}(self.ds)", ""]
    out += ["def make0(url):", "    return Remote0(url)", ""]
    for i in range(1, depth + 1):
        out += [f"def make{i}(url):", f"    return make{i - 1}(url)", ""]
    out += ["def main():",
            f"    run{depth}(Remote0('a'), 2)",
            f"    run{depth}(Remote1('b'), 4)",
            f"    ping(Remote2('c'), 3)",
            f"    Stage{depth - 1}(Remote3('d')).fit()",
            f"    run{depth}(make{depth}('e'), 2)", ""]
    return "\n".join(out)


def _project(depth: int) -> Project:
    sources = {f"data{k}.py": DATA.format(k=k) for k in range(4)}
    sources["data.py"] = "".join(f"from data{k} import Remote{k}\n" for k in range(4))
    sources["loader.py"] = LOADER
    sources["chain.py"] = _chain(depth)
    facts: list[FileFacts] = []
    for path, text in sources.items():
        found = file_facts(text, path, path[:-3], False, DEFAULT_REGISTRY)
        assert not found.error, (path, found.error)
        facts.append(found)
    return Project(facts, registry=DEFAULT_REGISTRY)


def _linked(depth: int) -> tuple[int, set[tuple[str, str, int]]]:
    project = _project(depth)
    findings = evaluate(project, DEFAULT_REGISTRY)
    return project.flow_work, {(f.path, f.code, f.line) for f in findings}


@pytest.mark.parametrize("depth", [3, 12, 40])
def test_every_dataset_is_linked_however_deep(depth: int) -> None:
    _, found = _linked(depth)
    assert found == {(f"data{k}.py", "WS101", 7) for k in range(4)}


def test_linking_work_grows_linearly_with_the_chains() -> None:
    depths = [10, 20, 40, 80]
    work = [_linked(d)[0] for d in depths]
    for (small, big), (w_small, w_big) in zip(zip(depths, depths[1:]), zip(work, work[1:])):
        # doubling the depth doubles the program; 2**depth paths would square the work
        assert w_big <= 2.3 * w_small, (small, big, w_small, w_big, work)
    assert work[-1] <= 8 * 2.3 * work[0] * 1.0, work
