"""An interrupt (Ctrl-C) that arrives while an object's answer is half read: the batch reader
is out of step with git. It used to read on for answers that never came and hung for ever;
now the process is dropped, the interrupt goes on, and the next read starts another."""

from __future__ import annotations

import threading

from patchstack.git import find_repo
from patchstack.git.objects import Objects
from patchstack.lock import Interrupted

from .conftest import make_repo


def test_an_interrupt_inside_a_read_neither_hangs_nor_breaks_the_next_read(
    tmp_path, monkeypatch
) -> None:
    repo = make_repo(tmp_path / "r", {f"f{i}.py": f"{i}\n" * 50 for i in range(20)})
    git = find_repo(str(repo.path))
    tree = git.tree_of("HEAD")
    blobs = [entry[-1] for entry in git.files_of(tree).values()]
    real = Objects._answer
    calls = []

    def interrupted_half_way(which, stdout, read_content):
        calls.append(1)
        if len(calls) == 3:
            stdout.readline()  # the header read, the content not: then the signal
            raise Interrupted(2)  # SIGINT
        return real(which, stdout, read_content)

    monkeypatch.setattr(Objects, "_answer", staticmethod(interrupted_half_way))
    outcome: list[object] = []

    def read() -> None:
        try:
            git.read_objects(blobs)
        except Interrupted as e:
            outcome.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert not reader.is_alive(), "the read hung after the interrupt"
    assert outcome and isinstance(outcome[0], Interrupted)
    monkeypatch.setattr(Objects, "_answer", staticmethod(real))
    assert [t for t, _data in git.read_objects(blobs)] == ["blob"] * len(blobs)
    assert len(calls) >= 3  # the interrupt came inside the third answer
    git.close()
