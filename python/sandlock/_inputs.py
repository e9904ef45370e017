"""sandlock.inputs: inside the consumer of a Gather, the producers' outputs
by name.

The pipeline passes one pipe per producer, open at the same fd number in
the consumer, and names them in the _SANDLOCK_GATHER environment
variable ("name:fd,name:fd").  Each pipe is read to its end on first
access and the text (UTF-8) kept.
"""

import os
from typing import Dict, Iterator, Mapping, Optional

GATHER_ENV = "_SANDLOCK_GATHER"


def _parse(spec: Optional[str]) -> Dict[str, int]:
    fds = {}
    for item in filter(None, (spec or "").split(",")):
        name, sep, fd = item.rpartition(":")
        if not sep or not name or not fd.isdigit():
            raise ValueError("malformed %s entry %r" % (GATHER_ENV, item))
        fds[name] = int(fd)
    return fds


class _Inputs(Mapping[str, str]):
    """Read-only mapping name -> str of the producers' full stdout."""

    def __init__(self) -> None:
        self._fds: Optional[Dict[str, int]] = None
        self._cache: Dict[str, str] = {}

    def _names(self) -> Dict[str, int]:
        if self._fds is None:
            self._fds = _parse(os.environ.get(GATHER_ENV))
        return self._fds

    def __getitem__(self, name: str) -> str:
        fds = self._names()
        if name not in fds:
            raise KeyError(name)
        if name not in self._cache:
            chunks = []
            while True:
                b = os.read(fds[name], 1 << 16)
                if not b:
                    break
                chunks.append(b)
            os.close(fds[name])
            self._cache[name] = b"".join(chunks).decode("utf-8")
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names()))

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return "<sandlock.inputs %s>" % list(self._names())


inputs = _Inputs()
