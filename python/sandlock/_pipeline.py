"""Pipelines of sandboxes: Stage | Stage -> Pipeline, and fan-in with
NamedStage + NamedStage -> Gather, Gather | Stage -> GatherPipeline.

Every stage runs in its own sandbox with its own policy; stages are
connected by kernel pipes, never through this process.  A pipeline's
Result is its last stage's (like a shell pipeline without pipefail: the
exit code, stdout and stderr of the last command); the Results of all
stages are on the pipeline's ``results`` after run().  A timeout bounds
the whole pipeline: when it expires every stage still running is killed
and the Result is a failed one with "timed out" in its error.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Iterable, List, Optional, Union

from ._inputs import GATHER_ENV
from ._checks import argv as _argv
from ._process import Fd, Process, StdioMode, spawn
from ._result import ExitReason, Result
from ._run import SandboxLike
from .exceptions import PolicyTypeError, PolicyValueError

# Where a stage's stdout goes: a StdioMode, an fd (Fd) or a file object.
Stdout = Any

__all__ = ["Stage", "NamedStage", "Pipeline", "Gather", "GatherPipeline"]


class Stage:
    """A command bound to a Sandbox, run when its pipeline runs
    (Sandbox.cmd(args))."""

    def __init__(self, sandbox: SandboxLike, args: Iterable[str]) -> None:
        _argv(args)  # a bad command is an error now, not at run()
        self.sandbox = sandbox
        self.args = list(args)

    def __repr__(self) -> str:
        return "Stage(%r)" % (self.args,)

    def __or__(self, other: Stage) -> Pipeline:
        return Pipeline([self, other])

    def as_(self, name: str) -> NamedStage:
        """Label this stage's stdout for the consumer of a Gather."""
        return NamedStage(self, name)

    def run(self, stdout: Stdout = None, timeout: Optional[float] = None) -> Result:
        """Run this one command (stdin /dev/null, stdout captured)."""
        return _run_chain([self], stdout, timeout)[-1]


def _finish(procs: List[Process], timeout: Optional[float]) -> List[Result]:
    """Wait for every process within one deadline (None: forever); the
    Results, the last one marked failed if the deadline ended anything."""
    deadline = None if timeout is None else time.monotonic() + timeout
    results: List[Result] = []
    for p in procs:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        results.append(p.wait(left))
    if timeout is not None and any(r.reason == ExitReason.TIMEOUT for r in results):
        results[-1] = dataclasses.replace(
            results[-1], success=False, error="pipeline timed out after %gs" % timeout)
    return results


def _run_chain(stages: List[Stage], stdout: Stdout,
               timeout: Optional[float]) -> List[Result]:
    procs: List[Process] = []
    prev: Optional[int] = None  # read end feeding the next stage
    try:
        for i, st in enumerate(stages):
            last = i == len(stages) - 1
            r: Optional[int] = None
            w: Optional[int] = None
            out: Stdout
            if last:
                out = StdioMode.CAPTURE if stdout is None else stdout
            else:
                r, w = os.pipe()
                out = Fd(w)
            try:
                procs.append(spawn(st.sandbox, st.args,
                                   StdioMode.NULL if prev is None else Fd(prev), out,
                                   StdioMode.CAPTURE, timeout=timeout))
            finally:
                # The command has its own copies: ours would keep the
                # pipes open past its end (no EOF for the next stage).
                for fd in (prev, w):
                    if fd is not None:
                        os.close(fd)
                prev = None
            prev = r
        return _finish(procs, timeout)
    finally:
        if prev is not None:
            os.close(prev)
        for p in procs:
            p.close()  # ends whatever still runs (an error above)


class Pipeline:
    """Stages whose stdout feeds the next one's stdin (at least 2)."""

    def __init__(self, stages: Iterable[Stage]) -> None:
        self.stages = list(stages)
        if len(self.stages) < 2:
            raise PolicyValueError("a Pipeline needs at least 2 stages, got %d"
                                   % len(self.stages))
        for st in self.stages:
            if not isinstance(st, Stage):
                raise PolicyTypeError("a pipeline continues with a Stage, got %r" % (st,))
        self.results: Optional[List[Result]] = None

    def __or__(self, other: Stage) -> Pipeline:
        return Pipeline(self.stages + [other])

    def __repr__(self) -> str:
        return " | ".join(repr(s) for s in self.stages)

    def run(self, stdout: Stdout = None, timeout: Optional[float] = None) -> Result:
        """Run all stages at once, connected by pipes; the first reads
        /dev/null, the last one's stdout is captured (or goes to stdout: a
        file or sandlock.Fd).  Every stage's stderr is captured.  timeout
        (seconds) bounds the whole pipeline.  Returns the last stage's
        Result."""
        self.results = _run_chain(self.stages, stdout, timeout)
        return self.results[-1]


class NamedStage:
    """A Stage whose stdout a Gather's consumer reads as inputs[name]
    (stage.as_(name))."""

    def __init__(self, stage: Stage, name: str) -> None:
        if not isinstance(stage, Stage):
            raise PolicyTypeError("NamedStage(stage, name) takes a Stage first, got %r"
                                  % (stage,))
        if not isinstance(name, str) or not name or any(c in name for c in ",:="):
            raise PolicyValueError("a stage name is a non-empty str without ',', ':' or '=', "
                                   "got %r" % (name,))
        self.stage = stage
        self.name = name

    def __add__(self, other: Union[NamedStage, Gather]) -> Gather:
        return Gather([self]) + other

    def __or__(self, consumer: Stage) -> GatherPipeline:
        return Gather([self]) | consumer


class Gather:
    """Several named producers for one consumer (``sources``, in order)."""

    def __init__(self, sources: Iterable[NamedStage]) -> None:
        self.sources = list(sources)
        names = [p.name for p in self.sources]
        if len(set(names)) != len(names):
            raise PolicyValueError("duplicate stage names in a Gather: %r" % (names,))

    def __add__(self, other: Union[NamedStage, Gather]) -> Gather:
        if isinstance(other, NamedStage):
            return Gather(self.sources + [other])
        if isinstance(other, Gather):
            return Gather(self.sources + other.sources)
        raise PolicyTypeError("a Gather extends with a NamedStage (stage.as_(name)), got %r"
                              % (other,))

    def __or__(self, consumer: Stage) -> GatherPipeline:
        if not isinstance(consumer, Stage):
            raise PolicyTypeError("a Gather feeds a Stage, got %r" % (consumer,))
        return GatherPipeline(self, consumer)


class GatherPipeline:
    """Producers run in parallel, each into its own pipe; as in the
    reference, the consumer reads the last source on its stdin and the
    others on fds 3, 4, ... in order (sandlock.inputs names them).  Its
    Result is the pipeline's."""

    def __init__(self, gather: Gather, consumer: Stage) -> None:
        self.gather = gather
        self.consumer = consumer
        self.results: Optional[List[Result]] = None

    def run(self, timeout: Optional[float] = None) -> Result:
        procs: List[Process] = []
        mine: List[int] = []
        try:
            for ns in self.gather.sources:
                r, w = os.pipe()
                mine.append(r)
                try:
                    procs.append(spawn(ns.stage.sandbox, ns.stage.args, StdioMode.NULL, Fd(w),
                                       StdioMode.CAPTURE, timeout=timeout))
                finally:
                    os.close(w)
            names = [ns.name for ns in self.gather.sources]
            spec = ",".join("%s:%d" % (n, 3 + i) for i, n in enumerate(names[:-1]))
            spec = ",".join(filter(None, (spec, "%s:0" % names[-1])))
            c = self.consumer
            procs.append(spawn(c.sandbox, c.args, Fd(mine[-1]), StdioMode.CAPTURE,
                               StdioMode.CAPTURE, timeout=timeout, pass_fds=mine[:-1],
                               extra_env={GATHER_ENV: spec}, fds_in_order=True))
            for fd in mine:  # the consumer has them now
                os.close(fd)
            mine = []
            self.results = _finish(procs, timeout)
            return self.results[-1]
        finally:
            for fd in mine:
                os.close(fd)
            for p in procs:
                p.close()
