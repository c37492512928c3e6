"""The facts the WS3xx rules read (analysis/remedies.py): what names are bound to, not how
they are spelled; and they survive the on-disk cache."""

from __future__ import annotations

import json
import textwrap

from workersafe.facts import FileFacts, RemedyFacts, from_jsonable, to_jsonable
from workersafe.parse import file_facts
from workersafe.registry import Registry


def remedies(source: str) -> RemedyFacts:
    facts = file_facts(textwrap.dedent(source), "m.py", "m", False, Registry())
    assert isinstance(facts, FileFacts) and not facts.error, facts
    return facts.remedies


def test_worker_dataset_followed_through_names_however_bound() -> None:
    found = remedies("""
        import requests
        import torch.utils.data as tud

        def init(worker_id):
            info = tud.get_worker_info()
            first = info
            ds = first.dataset
            target = ds
            target.session = requests.Session()
            target.configure()
    """)
    (init,) = found.worker_inits
    assert init.name == "m.init"
    assert [s.attr for s in init.sets] == ["session"]
    assert [c.attr for c in init.calls] == ["configure"]
    assert not init.walks_wrappers


def test_a_name_spelled_like_the_worker_dataset_is_not_it() -> None:
    found = remedies("""
        import requests

        def init(worker_id):
            info = object()
            info.dataset.session = requests.Session()
    """)
    assert found.worker_inits == ()


def test_walking_wrappers() -> None:
    found = remedies("""
        import random
        import requests
        from torch.utils.data import get_worker_info

        def init(worker_id):
            random.seed(worker_id)
            ds = get_worker_info().dataset
            for inner in ds.datasets:
                inner.session = requests.Session()
    """)
    (init,) = found.worker_inits
    assert init.walks_wrappers


def test_loader_wrappers_and_iteration() -> None:
    found = remedies("""
        from torch.utils.data import DataLoader, random_split

        def main(ds):
            train, val = random_split(ds, [0.9, 0.1])
            loader = DataLoader(train, num_workers=4)
            plain = DataLoader(ds)
            print(ds[0])
            for batch in loader:
                pass
    """)
    wrapped, plain = found.loaders
    assert wrapped.wrapper == "torch.utils.data.random_split" and wrapped.scope == "main"
    assert wrapped.iterated_line == 9
    assert plain.wrapper == "" and plain.iterated_line == 0


def test_lazy_accessor_and_process_check_by_meaning() -> None:
    found = remedies("""
        import os
        import lmdb

        class Plain:
            def get(self):
                if self.env is None:
                    self.env = lmdb.open("p")
                return self.env

        class Checked:
            def __init__(self):
                self.owner = os.getpid()

            def get(self):
                if self.env is None or self.owner != os.getpid():
                    self._connect()
                return self.env
    """)
    plain, checked = found.classes
    (lazy,) = plain.lazy
    assert (lazy.attr, lazy.method, lazy.process_checked) == ("env", "get", False)
    assert lazy.site is not None and lazy.site.handle == "lmdb.open"
    (lazy,) = checked.lazy
    assert (lazy.opener, lazy.process_checked) == ("_connect", True)


def test_remedy_facts_survive_the_cache() -> None:
    facts = file_facts(textwrap.dedent("""
        import lmdb
        from torch.utils.data import DataLoader, Dataset, Subset, get_worker_info

        class D(Dataset):
            def __init__(self):
                self.env = None

            def __getitem__(self, i):
                if self.env is None:
                    self.env = lmdb.open("x")
                return self.env

        d = D()
        loader = DataLoader(Subset(d, [0]), num_workers=2,
                            worker_init_fn=lambda _: get_worker_info().dataset.open())
        print(d[0])
    """), "m.py", "m", False, Registry())
    assert facts.remedies.classes and facts.remedies.uses and facts.remedies.worker_inits
    again = from_jsonable(FileFacts, json.loads(json.dumps(to_jsonable(facts))))
    assert again == facts


def test_lazy_spellings() -> None:
    found = remedies("""
        import h5py
        import requests

        class A:
            def get(self):
                if getattr(self, "f", None) is None:
                    self.f = h5py.File("a.h5", "r")
                self.session = self.session or requests.Session()
                return self.f
    """)
    (cls,) = found.classes
    assert sorted((lz.attr, lz.site.handle if lz.site else "") for lz in cls.lazy) == [
        ("f", "h5py.File"), ("session", "requests.Session")]


def test_process_check_through_an_aliased_import_only_where_a_class_makes_one() -> None:
    found = remedies("""
        import requests
        from os import getpid as pid

        class Checked:
            def __init__(self):
                self.s = None
                self._pid = None

            def get(self):
                if self.s is None or self._pid != pid():
                    self._pid = pid()
                    self.s = requests.Session()
                return self.s

        class Unchecked:
            def __init__(self):
                self.s = None

            def get(self):
                if self.s is None:
                    self.s = requests.Session()
                return self.s
    """)
    checked, unchecked = found.classes
    assert [(lz.attr, lz.process_checked) for lz in checked.lazy] == [("s", True)]
    assert [(lz.attr, lz.process_checked) for lz in unchecked.lazy] == [("s", False)]


def test_uses_of_kept_objects_in_nested_code_count_for_the_method() -> None:
    found = remedies("""
        class Holder:
            def __init__(self, reader, table):
                self.reader = reader
                self.table = table

            def __getitem__(self, i):
                def fetch(k):
                    return self.reader.get(k)
                return [fetch(k) for k in self.table[i]]
    """)
    (cls,) = found.classes
    assert ("__getitem__", "reader", "get") in cls.member_uses
    assert cls.wrapped_attrs == ("table",)


def test_none_safe_reads_in_each_form_of_test() -> None:
    """A read handled by each form of test or fallback (nested code too) counts; one that is
    not, in a method spelling none of them, does not."""
    found = remedies("""
        import lmdb

        class DS:
            def __init__(self, path):
                self.path = path
                self.env = None
                self.txn = None
                self.db = None
                self.cache = None

            def env_or_open(self):
                return self.env or lmdb.open(self.path)

            def get_txn(self):
                if self.txn is not None:
                    return self.txn
                return lmdb.open(self.path).begin()

            def get_db(self):
                return self.db if self.db else lmdb.open(self.path)

            def nested(self):
                def inner():
                    if self.cache is not None:
                        return self.cache
                    return {}
                return inner()

            def plain(self):
                return self.cache.get(1)
    """)
    (cls,) = found.classes
    assert cls.none_safe == (("env_or_open", "env"), ("get_db", "db"), ("get_txn", "txn"),
                             ("nested", "cache"))


def test_what_the_walk_lets_the_remedy_pass_skip_is_still_read() -> None:
    """The remedy pass reads a method for lazy accessors only where the walk saw a candidate
    (`self.x = self.x or ...`, an unset test, nested code included), and qualifies callees as
    dotted names only: a DataLoader reached through an import call is the walk's, not one whose
    wrapper it records."""
    source = """
        import importlib
        import requests

        def main(ds):
            loader = importlib.import_module("torch.utils.data").DataLoader(ds, num_workers=2)
            for batch in loader:
                pass

        class Reader:
            def __init__(self, path):
                self.path = path
                self.session = None

            def get(self):
                self.session = self.session or requests.Session()
                return self.session

            def check(self):
                if self.path is not None:
                    return requests.Session()

            def nested(self):
                def inner():
                    if self.conn is None:
                        self.conn = requests.Session()
                inner()
    """
    facts = file_facts(textwrap.dedent(source), "m.py", "m", False, Registry())
    assert len(facts.loaders) == 1 and not facts.remedies.loaders
    (cls,) = facts.remedies.classes
    assert [(lz.attr, lz.method, lz.site.handle if lz.site else "") for lz in cls.lazy] == [
        ("session", "get", "requests.Session"), ("conn", "nested", "requests.Session")]
    assert [a.attr for a in cls.init_none] == ["session"]
