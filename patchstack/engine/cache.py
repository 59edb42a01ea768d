"""A small key -> object id map in the git directory (``patchstack/cache``); entries are
checked to exist before use, and a line torn by a crash is skipped."""

from __future__ import annotations

import os

from ..git import Git
from ..model.ids import Oid


class Cache:
    def __init__(self, git: Git) -> None:
        self.git = git
        self.path = os.path.join(git.common_dir, "patchstack", "cache")
        self.entries: dict[str, str] = {}
        self.added: dict[str, str] = {}
        sizes = (git.fmt.hexsz,)
        try:
            with open(self.path, encoding="utf-8", errors="surrogateescape") as f:
                for line in f:
                    key, _, value = line.rstrip("\n").rpartition(" ")
                    if len(value) in sizes and not value.strip("0123456789abcdef"):
                        self.entries[key] = value
        except (FileNotFoundError, UnicodeDecodeError):
            pass

    def get(self, key: str) -> Oid | None:
        value = self.entries.get(key)
        if value and self.git.has_objects([value])[value]:
            return Oid(value)
        return None

    def put(self, key: str, value: str) -> None:
        if self.entries.get(key) != value:
            self.entries[key] = value
            self.added[key] = value

    def save(self) -> None:
        if not self.added:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "a", encoding="utf-8", errors="surrogateescape") as f:
            f.writelines(f"{k} {v}\n" for k, v in self.added.items())
        self.added.clear()
