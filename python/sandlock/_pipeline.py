"""Pipelines of sandboxes: Stage | Stage -> Pipeline, and fan-in with
NamedStage + NamedStage -> Gather, Gather | Stage -> GatherPipeline.

Every stage runs in its own sandbox with its own policy; stages are
connected by kernel pipes, never through this process.  A pipeline's
Result is its last stage's (like a shell pipeline without pipefail: the
exit code, stdout and stderr of the last command); the Results of all
stages are on the pipeline's ``results`` after run().
"""

import os

from ._inputs import GATHER_ENV
from ._process import StdioMode, spawn
from .exceptions import PolicyTypeError, PolicyValueError

__all__ = ["Stage", "NamedStage", "Pipeline", "Gather", "GatherPipeline"]


class Stage:
    """A command bound to a Sandbox, run when its pipeline runs
    (Sandbox.cmd(args))."""

    def __init__(self, sandbox, args):
        from . import _argv

        _argv(args)  # a bad command is an error now, not at run()
        self.sandbox = sandbox
        self.args = list(args)

    def __repr__(self):
        return "Stage(%r)" % (self.args,)

    def __or__(self, other):
        return Pipeline([self]) | other

    def as_(self, name) -> "NamedStage":
        """Label this stage's stdout for the consumer of a Gather."""
        return NamedStage(name, self)

    def run(self, stdout=None, timeout=None):
        return Pipeline([self]).run(stdout=stdout, timeout=timeout)


class Pipeline:
    """Stages whose stdout feeds the next one's stdin."""

    def __init__(self, stages):
        self.stages = list(stages)
        self.results = None

    def __or__(self, other):
        if not isinstance(other, Stage):
            raise PolicyTypeError("a pipeline continues with a Stage, got %r" % (other,))
        return Pipeline(self.stages + [other])

    def __repr__(self):
        return " | ".join(repr(s) for s in self.stages)

    def run(self, stdout=None, timeout=None):
        """Run all stages at once, connected by pipes; the first reads
        /dev/null, the last one's stdout is captured (or goes to stdout: a
        file or fd).  Every stage's stderr is captured.  timeout (seconds)
        applies to each stage.  Returns the last stage's Result."""
        procs = []
        prev = None  # read end feeding the next stage
        try:
            for i, st in enumerate(self.stages):
                last = i == len(self.stages) - 1
                r = w = None
                if not last:
                    r, w = os.pipe()
                out = (StdioMode.CAPTURE if stdout is None else stdout) if last else w
                try:
                    procs.append(spawn(st.sandbox, st.args,
                                       StdioMode.DEVNULL if prev is None else prev, out,
                                       StdioMode.CAPTURE, timeout=timeout))
                finally:
                    # The command has its own copies: ours would keep the
                    # pipes open past its end (no EOF for the next stage).
                    for fd in (prev, w):
                        if fd is not None:
                            os.close(fd)
                    prev = None
                prev = r
            self.results = [p.wait() for p in procs]
            return self.results[-1]
        finally:
            if prev is not None:
                os.close(prev)
            for p in procs:
                p.close()  # ends whatever still runs (an error above)


class NamedStage:
    """A Stage whose stdout a Gather's consumer reads as inputs[name]."""

    def __init__(self, name, stage):
        if not isinstance(name, str) or not name or any(c in name for c in ",:="):
            raise PolicyValueError("a stage name is a non-empty str without ',', ':' or '=', "
                                   "got %r" % (name,))
        self.name = name
        self.stage = stage

    def __add__(self, other):
        return Gather([self]) + other

    def __or__(self, consumer):
        return Gather([self]) | consumer


class Gather:
    """Several named producers for one consumer."""

    def __init__(self, producers):
        self.producers = list(producers)
        names = [p.name for p in self.producers]
        if len(set(names)) != len(names):
            raise PolicyValueError("duplicate stage names in a Gather: %r" % (names,))

    def __add__(self, other):
        if isinstance(other, NamedStage):
            return Gather(self.producers + [other])
        if isinstance(other, Gather):
            return Gather(self.producers + other.producers)
        raise PolicyTypeError("a Gather extends with a NamedStage (stage.as_(name)), got %r"
                              % (other,))

    def __or__(self, consumer):
        if not isinstance(consumer, Stage):
            raise PolicyTypeError("a Gather feeds a Stage, got %r" % (consumer,))
        return GatherPipeline(self, consumer)


class GatherPipeline:
    """Producers run in parallel, each into its own pipe; the consumer gets
    the read ends (sandlock.inputs) and its Result is the pipeline's."""

    def __init__(self, gather, consumer):
        self.gather = gather
        self.consumer = consumer
        self.results = None

    def run(self, timeout=None):
        procs, mine = [], []
        try:
            ends = {}
            for ns in self.gather.producers:
                r, w = os.pipe()
                mine.append(r)
                try:
                    procs.append(spawn(ns.stage.sandbox, ns.stage.args, StdioMode.DEVNULL, w,
                                       StdioMode.CAPTURE, timeout=timeout))
                finally:
                    os.close(w)
                ends[ns.name] = r
            spec = ",".join("%s:%d" % (n, fd) for n, fd in ends.items())
            c = self.consumer
            procs.append(spawn(c.sandbox, c.args, StdioMode.DEVNULL, StdioMode.CAPTURE,
                               StdioMode.CAPTURE, timeout=timeout, pass_fds=list(ends.values()),
                               extra_env={GATHER_ENV: spec}))
            for fd in mine:  # the consumer has them now
                os.close(fd)
            mine = []
            self.results = [p.wait() for p in procs]
            return self.results[-1]
        finally:
            for fd in mine:
                os.close(fd)
            for p in procs:
                p.close()
