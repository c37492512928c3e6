"""Linking does work linear in the program, not in the number of paths through it.

Each project below links a dataset to its loader through chains that fan out: every helper
calls the next one twice (so a parameter has 2**depth paths back to the construction), an
attribute kept by a chain of holder classes, a factory returning a factory's result, and a
cycle of helpers calling each other. The recursive linker this replaced walked every path
(and cut them at depth 8, leaving deep datasets latent). The solver's own step counter
(`Project.flow_work`) must grow about as the project does, and every dataset must still be
linked to its loader (confirmed, WS101), however deep."""

from __future__ import annotations

import json

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
    make<i-1>(); wrappers nest the dataset `depth` deep."""
    out = ["from torch.utils.data import Dataset", "from loader import *", "from data import *", ""]
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
    for i in range(depth):  # wrappers keeping the dataset they wrap, nested `depth` deep
        out += [f"class Wrap{i}(Dataset):",
                "    def __init__(self, inner):",
                "        self.inner = inner", "",
                "    def __getitem__(self, i):",
                "        return self.inner[i]", ""]
    out += ["def make0(url):", "    return Remote0(url)", ""]
    for i in range(1, depth + 1):
        out += [f"def make{i}(url):", f"    return make{i - 1}(url)", ""]
    out += ["def main():",
            f"    run{depth}(Remote0('a'), 2)",
            f"    run{depth}(Remote1('b'), 4)",
            f"    ping(Remote2('c'), 3)",
            f"    Stage{depth - 1}(Remote3('d')).fit()",
            f"    run{depth}(make{depth}('e'), 2)",
            "    run0(" + "".join(f"Wrap{i}(" for i in reversed(range(depth)))
            + "Remote4('f')" + ")" * depth + ", 2)", ""]
    return "\n".join(out)


def _rewrapped(depth: int) -> str:
    """`x = Wrap<i>(x)` again and again: each `x` read may be any earlier one, so the reference
    of the last wrapper nests every earlier one as an alternative (shared, 2**depth as a
    tree)."""
    out = _chain(depth).replace("def main():", "def unused():")
    out += "\n".join(["", "def main():", "    wrapped = Remote4('g')"]
                     + [f"    wrapped = Wrap{i}(wrapped)" for i in range(depth)]
                     + ["    return run0(wrapped, 2)", ""])
    return out


def _project(depth: int, chain: str = "") -> Project:
    sources = {f"data{k}.py": DATA.format(k=k) for k in range(5)}
    sources["data.py"] = "".join(f"from data{k} import Remote{k}\n" for k in range(5))
    sources["loader.py"] = LOADER
    sources["chain.py"] = chain or _chain(depth)
    facts: list[FileFacts] = []
    for path, text in sources.items():
        found = file_facts(text, path, path[:-3], False, DEFAULT_REGISTRY)
        assert not found.error, (path, found.error)
        facts.append(found)
    return Project(facts, registry=DEFAULT_REGISTRY)


def _linked(depth: int, chain: str = "") -> tuple[int, set[tuple[str, str, int]]]:
    project = _project(depth, chain)
    findings = evaluate(project, DEFAULT_REGISTRY)
    return project.flow_work, {(f.path, f.code, f.line) for f in findings}


@pytest.mark.parametrize("depth", [3, 12, 40])
def test_every_dataset_is_linked_however_deep(depth: int) -> None:
    _, found = _linked(depth)
    assert found == {(f"data{k}.py", "WS101", 7) for k in range(5)}


def test_linking_work_grows_linearly_with_the_chains() -> None:
    depths = [10, 20, 40, 80]
    work = [_linked(d)[0] for d in depths]
    for (small, big), (w_small, w_big) in zip(zip(depths, depths[1:]), zip(work, work[1:])):
        # doubling the depth doubles the program; 2**depth paths would square the work
        assert w_big <= 2.3 * w_small, (small, big, w_small, w_big, work)
    assert work[-1] <= 8 * 2.3 * work[0] * 1.0, work


def test_a_variable_rebound_to_its_wrapper_is_linked() -> None:
    """The nested alternatives are read once per object (hashing them as a tree would take
    2**60 steps here: the test would never end)."""
    _, found = _linked(60, _rewrapped(60))
    assert ("data4.py", "WS101", 7) in found


def _registry_project(n: int) -> Project:
    """`n` datasets registered by a decorator, each built by a constant name (`DATASETS.build`,
    a factory's `if name == ...` branch) and given to loaders through a loop over a parameter;
    `n` lookups by a name read at run time besides."""
    registry = ("class Registry:\n    def register_module(self, name=None):\n"
                "        return lambda cls: cls\n\n\nDATASETS = Registry()\n")
    data = ["import requests", "from torch.utils.data import Dataset",
            "from registry import DATASETS", ""]
    for k in range(n):
        data += ["@DATASETS.register_module()", f"class Remote{k}(Dataset):",
                 "    def __init__(self, url):",
                 "        self.session = requests.Session()", "",
                 "    def __getitem__(self, i):", "        return self.session.get(i)", ""]
    data += ["def get_dataset(name, url):"]
    for k in range(n):
        data += [f"    {'if' if k == 0 else 'elif'} name == 'f{k}':",
                 f"        return Remote{k}(url)"]
    main = ["import sys", "from torch.utils.data import DataLoader",
            "from registry import DATASETS", "from data import get_dataset", "",
            "def make_loaders(datasets):",
            "    return [DataLoader(ds, num_workers=2) for ds in datasets]", "",
            "def main():"]
    for k in range(n):  # lines 10 + 3k, 11 + 3k, 12 + 3k
        main += [f"    DataLoader(DATASETS.build(dict(type='Remote{k}')), num_workers=2)",
                 f"    make_loaders([get_dataset('f{k}', 'u')])",
                 f"    DataLoader(DATASETS.build(dict(type=sys.argv[{k}])), num_workers=2)"]
    facts = [file_facts(text, path, path[:-3], False, DEFAULT_REGISTRY) for path, text in (
        ("registry.py", registry), ("data.py", "\n".join(data) + "\n"),
        ("main.py", "\n".join(main) + "\n"))]
    assert not any(f.error for f in facts)
    return Project(facts, registry=DEFAULT_REGISTRY)


def test_registries_factories_and_loops_link_in_linear_work() -> None:
    """Each registered class is linked by its constant name alone (no lookup links all of
    them), and the work grows as the program does."""
    sizes = [20, 40, 80, 160]
    work = []
    for n in sizes:
        project = _registry_project(n)
        found = {(f.path, f.code, f.line) for f in evaluate(project, DEFAULT_REGISTRY)}
        assert found == {("data.py", "WS101", 8 + 8 * k) for k in range(n)}
        uses = project.loaders_by_class()
        for k in range(n):  # its own build's loader and make_loaders' (line 7), no other
            assert {u[1].span.line for u in uses[f"data.Remote{k}"]} == {10 + 3 * k, 7}
        work.append(project.flow_work)
    for (small, big), (w_small, w_big) in zip(zip(sizes, sizes[1:]), zip(work, work[1:])):
        assert w_big <= 2.3 * w_small, (small, big, w_small, w_big, work)


def _rewrapped_facts(depth: int) -> FileFacts:
    found = file_facts(_rewrapped(depth), "chain.py", "chain", False, DEFAULT_REGISTRY)
    assert not found.error, found.error
    return found


def test_shared_references_are_written_once_and_read_back_shared() -> None:
    """The cache's JSON of a file whose last wrapper's reference nests every earlier one
    (2**depth as a tree) grows as the file's facts do, and reads back as the same DAG (written
    again, the same text); what the selection reads of it (`_nested_refs`) visits each object
    once. Written out as a tree, depth 60 would take 2**60 steps."""
    from workersafe.facts import from_jsonable, to_jsonable
    from workersafe.selection import _nested_refs

    sizes = []
    for depth in (15, 30, 60):
        facts = _rewrapped_facts(depth)
        text = json.dumps(to_jsonable(facts))
        again = from_jsonable(FileFacts, json.loads(text))
        assert json.dumps(to_jsonable(again)) == text
        passed = [r for call in again.calls for arg in call.args for r in arg.refs]
        assert [r.target for r in passed] \
            == [r.target for call in facts.calls for arg in call.args for r in arg.refs]
        sizes.append((len(text), len(_nested_refs(passed))))
    # each `wrapped` read may be any earlier one: the facts grow as depth**2 (doubling the
    # depth, about 3x); as a tree they would grow as 2**depth
    for small, big in zip(sizes, sizes[1:]):
        assert big[0] <= 4 * small[0] and big[1] <= 4 * small[1], sizes
    small = _rewrapped_facts(8)  # (equality compares the copy as a tree: a small one)
    assert from_jsonable(FileFacts, json.loads(json.dumps(to_jsonable(small)))) == small
