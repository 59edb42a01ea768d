"""What ``pop`` of one patch costs, counted (not timed): the patch files it reads (none that
were left alone since their commits were proven: `_StatMemo`) and the sections of the cache
it unmarshals (the proofs, the series file's parse and the stack kept by HEAD, not the builds
or the patch files' parses: `store.Store`, each section marshalled on its own)."""

from __future__ import annotations

import marshal
import os

from patchstack.checkout import Checkout
from patchstack.store import Store

from .conftest import Repo, make_repo, numbered, replace_line

N = 12


def _series(tmp_path) -> Repo:
    repo = make_repo(tmp_path / "fork", {f"f{i}.py": numbered(20, f"f{i}") for i in range(N)})
    repo.ps("init")
    for i in range(N):
        replace_line(repo, f"f{i}.py", f"f{i} 5\n", f"f{i} 5 p{i}\n")
        repo.ps("new", f"p{i}", "--tag", "essential")
    for name in os.listdir(repo.path / "patches"):
        os.utime(repo.path / "patches" / name, (1_700_000_000, 1_700_000_000))
    repo.ps("pop", "--all")
    repo.ps("push", "--all")  # proves every commit at its file's (old) stat data
    return repo


def test_pop_of_one_patch_reads_no_other_file_and_only_the_proofs(tmp_path, monkeypatch) -> None:
    repo = _series(tmp_path)
    cache = repo.path / ".git" / "patchstack" / "cache"
    sections = marshal.loads(cache.read_bytes())["sections"]
    assert {"build", "parsed", "proven"} <= sections.keys()
    read: list[str] = []
    opened: list[str] = []
    real_bytes, real_section = Checkout.proven_bytes, Store._section

    def reading(self, entry):  # type: ignore[no-untyped-def]
        read.append(entry.name)
        return real_bytes(self, entry)

    def unmarshalling(self, section):  # type: ignore[no-untyped-def]
        before = len(self.unmarshalled)
        found = real_section(self, section)
        opened.extend(self.unmarshalled[before:])
        return found

    monkeypatch.setattr(Checkout, "proven_bytes", reading)
    monkeypatch.setattr(Store, "_section", unmarshalling)
    kept = ["series", "stacks", "proven"]
    repo.ps("pop", f"p{N - 1}")
    assert read == [] and opened == kept
    read.clear()
    opened.clear()
    repo.ps("pop", f"p{N - 4}")  # three more
    assert read == [] and opened == kept
    # the sections it did not read are written back as they were
    after = marshal.loads(cache.read_bytes())["sections"]
    assert after["build"] == sections["build"] and after["parsed"] == sections["parsed"]
    repo.ps("push", "--all")
    assert [n for n in repo.read("patches/series").split() if n.endswith(".patch")][-1] == (
        f"p{N - 1}.patch"
    )


def test_a_cache_another_version_wrote_is_ignored_and_written_anew(tmp_path) -> None:
    """The first format, and the second without this version's name (`store.WRITER`): no
    cache, replaced by the next save; a section that cannot be read is an empty one."""
    from patchstack import store as store_module

    path = tmp_path / "cache"
    old = {"proven": {"k": (1, "v")}, "parsed": {"p": (1, [1, 2])}}
    first = {"format": "patchstack-cache", "version": 1, "generations": {}, "entries": old}
    sections = {k: marshal.dumps(v) for k, v in old.items()}
    second = {"format": "patchstack-cache", "version": 2, "generations": {}, "sections": sections}
    for other in (first, second, {**second, "writer": "0.0.1"}):
        path.write_bytes(marshal.dumps(other))
        store = Store(str(path))
        assert store.get("proven", "k") is None and store.get("parsed", "p") is None
    store.put("proven", "k2", "w")
    store.save()
    data = marshal.loads(path.read_bytes())
    assert data["version"] == 2 and data["writer"] == store_module.WRITER
    assert {k: v for k, (_g, v) in marshal.loads(data["sections"]["proven"]).items()} == {"k2": "w"}
    assert Store(str(path)).get("proven", "k2") == "w"
    path.write_bytes(marshal.dumps({**data, "sections": {"proven": b"not marshal"}}))
    assert Store(str(path)).get("proven", "k2") is None  # a section that cannot be read: empty
