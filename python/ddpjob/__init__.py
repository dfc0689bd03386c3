"""ddpjob from Python: submit job specs, sweeps and pipelines, follow, wait for and cancel them.

It drives the installed ``ddpjob`` command (``$DDPJOB``, else ``ddpjob`` on PATH) through its
stable interface (ddpjob(1), AFTER SUBMIT: the ``--json`` documents carry a ``version``) and turns
its exit codes into results and exceptions. Standard library only.

    import ddpjob
    job = ddpjob.submit("train.yaml", set={"train.lr": 0.05})
    job.wait()                      # the job's exit status
    job.status()["state"]           # "completed", "failed", ...
    print(job.logs(rank=0))
    sweep = ddpjob.submit({"name": "grid", ...})
    sweep.best("loss", "min")       # the completed trial with the lowest last loss
    tune = ddpjob.submit("tune.yaml")  # a pipeline (stages:)
    tune.wait()                     # 0 when every stage that ran completed
    tune.stage("train").logs(rank=0)
"""

import json
import os
import re
import shutil
import subprocess
import tempfile

__all__ = [
    "submit", "job", "Job", "Sweep", "Pipeline", "DdpjobError", "SpecError", "SubmitError",
    "ClusterUnreachable", "JobNotFound",
]

# The --json documents' version this package reads.
JSON_VERSION = 1
# ddpjob's exit codes (ddpjob(1), EXIT STATUS).
_EXIT_INVALID_SPEC, _EXIT_USAGE, _EXIT_SYSTEM, _EXIT_SUBMITTER, _EXIT_NO_LINK = 1, 2, 3, 4, 255


class DdpjobError(Exception):
    """A ddpjob command failed; .exit_status and .stderr say how."""

    def __init__(self, message, exit_status=None, stderr=""):
        super().__init__(message)
        self.exit_status = exit_status
        self.stderr = stderr


class SpecError(DdpjobError):
    """The spec has problems: .path, .line, .column, .message of the first; .problems, each."""

    def __init__(self, problems, exit_status, stderr):
        first = problems[0] if problems else {"path": None, "line": None, "column": None,
                                                 "message": stderr.strip()}
        super().__init__(stderr.strip() or first["message"], exit_status, stderr)
        self.problems = problems
        self.path, self.line, self.column = first["path"], first["line"], first["column"]
        self.message = first["message"]


class SubmitError(DdpjobError):
    """The scheduler's submitter (sbatch, qsub) is missing, failed, or printed no job id."""


class ClusterUnreachable(DdpjobError):
    """--on: the cluster could not be reached, or the link was lost (exit 255)."""


class JobNotFound(DdpjobError):
    """No job, sweep or record goes by that name or id."""


# "PATH:LINE:COL: message", as validate and submit print each problem.
_PROBLEM = re.compile(r"^(?P<path>[^\n:]+):(?P<line>\d+):(?P<column>\d+): (?P<message>.*)$")
# submit's word on a sweep: "ddpjob: sweep NAME: N trials as ..."
_SWEEP = re.compile(r"^ddpjob: sweep (?P<name>[^:\s]+): \d+ trials? ", re.M)
# ... and on a pipeline: "ddpjob: pipeline NAME: N stages; its record: DIR"
_PIPELINE = re.compile(r"^ddpjob: pipeline [^:\s]+: \d+ stages; its record: (?P<record>.+)$", re.M)


def _program():
    program = os.environ.get("DDPJOB") or shutil.which("ddpjob")
    if not program:
        raise DdpjobError("ddpjob is not installed here (nor named by $DDPJOB)")
    return program


def _run(args, on=None, timeout=None):
    """ddpjob ARGS (with --on ON): the finished process; a lost cluster raises."""
    argv = [_program()] + list(args) + (["--on", on] if on else [])
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)
    if on and done.returncode == _EXIT_NO_LINK:
        raise ClusterUnreachable(done.stderr.strip() or f"cluster {on} could not be reached",
                                 done.returncode, done.stderr)
    return done


def _fail(done, what):
    """The exception a failed command's exit status and words call for."""
    err = done.stderr
    if re.search(r'no (job|sweep|record)[^\n]*"', err) or "no such job" in err:
        return JobNotFound(err.strip() or what, done.returncode, err)
    if done.returncode == _EXIT_SUBMITTER:
        return SubmitError(err.strip() or what, done.returncode, err)
    if done.returncode == _EXIT_INVALID_SPEC:
        problems = [dict(m.groupdict(), line=int(m["line"]), column=int(m["column"]))
                    for m in map(_PROBLEM.match, err.splitlines()) if m]
        if problems:
            return SpecError(problems, done.returncode, err)
    return DdpjobError(f"{what}: {err.strip() or 'exit status %d' % done.returncode}",
                       done.returncode, err)


def _json(args, on, what):
    done = _run(list(args) + ["--json"], on)
    if done.returncode != 0:
        raise _fail(done, what)
    doc = json.loads(done.stdout)
    if doc.get("version") != JSON_VERSION:
        raise DdpjobError(f"{what}: a JSON document of version {doc.get('version')}; this "
                          f"package reads version {JSON_VERSION} (update one of them)")
    return doc


def _set_words(values):
    words = []
    for path, value in (values or {}).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, dict)):
            value = json.dumps(value)
        words += ["--set", f"{path}={value}"]
    return words


class Job:
    """A submitted job, by its name or scheduler id (as ddpjob status takes it)."""

    def __init__(self, id, on=None):
        self.id, self.on = str(id), on

    def __repr__(self):
        return f"ddpjob.Job({self.id!r}{', on=%r' % self.on if self.on else ''})"

    def status(self):
        """The job as `ddpjob status --json` says it: a dict with state, exit_status, ..."""
        jobs = _json(["status", self.id], self.on, f"status of {self.id}")["jobs"]
        if not jobs:
            raise JobNotFound(f"no job {self.id!r}")
        return jobs[0]

    def wait(self, timeout=None):
        """Blocks until the job's whole chain has ended: its exit status (0 completed)."""
        args = ["wait", self.id] + (["--timeout", str(int(timeout))] if timeout else [])
        done = _run(args, self.on)
        if done.returncode == 124 and timeout:
            raise TimeoutError(f"{self.id} has not ended within {timeout} s")
        if done.returncode != 0 and re.search(r'no (job|sweep|record)[^\n]*"', done.stderr):
            raise _fail(done, f"wait for {self.id}")
        return done.returncode

    def logs(self, rank=None, follow=False, stream=None):
        """Its ranks' output from its record (one rank's when rank is given) as text; follow:
        until the job ends. stream: "stdout" or "stderr" alone."""
        args = ["logs", self.id] + (["--rank", str(rank)] if rank is not None else [])
        args += (["-f"] if follow else []) + ([f"--{stream}"] if stream else [])
        done = _run(args, self.on)
        if done.returncode != 0:
            raise _fail(done, f"logs of {self.id}")
        return done.stdout

    def cancel(self):
        """Ends the job and any queued successor of its chain."""
        done = _run(["cancel", self.id], self.on)
        if done.returncode != 0:
            raise _fail(done, f"cancel of {self.id}")


class Sweep(Job):
    """A submitted sweep, by its name or array job id."""

    def __repr__(self):
        return f"ddpjob.Sweep({self.id!r}{', on=%r' % self.on if self.on else ''})"

    def status(self):
        """The sweep as `ddpjob status SWEEP --json` says it: a dict with trials, best, ..."""
        return _json(["status", self.id], self.on, f"status of sweep {self.id}")

    def trials(self):
        """Each trial as a dict: trial, params, state, exit_status, metrics (each metric's last
        value), job_id, record."""
        return self.status()["trials"]

    def frame(self):
        """trials() as a pandas DataFrame (pandas must be installed), params and metrics as
        columns of their own."""
        import pandas  # only where asked: the package needs no more than the standard library
        return pandas.json_normalize(self.trials())

    def best(self, metric=None, goal="min"):
        """The completed trial whose last `metric` is the lowest (goal "min") or highest ("max");
        without metric, the one status names best. None when no completed trial has it."""
        if goal not in ("min", "max"):
            raise ValueError(f"goal {goal!r}: expected 'min' or 'max'")
        doc = self.status()
        if metric is None:
            best = doc.get("best")
            return None if best is None else doc["trials"][best]
        have = [t for t in doc["trials"]
                if t["state"] == "completed" and isinstance(t["metrics"].get(metric), (int, float))]
        if not have:
            return None
        pick = min if goal == "min" else max
        return pick(have, key=lambda t: t["metrics"][metric])


class Pipeline(Job):
    """A submitted pipeline, by its name or its record's folder. Looking at it (status, wait)
    also starts the stages that can start, as each stage's end does."""

    def __repr__(self):
        return f"ddpjob.Pipeline({self.id!r}{', on=%r' % self.on if self.on else ''})"

    def status(self):
        """The pipeline as `ddpjob status PIPELINE --json` says it: a dict with state, ended
        and stages (each: name, state, said, kind, job, record)."""
        return _json(["status", self.id], self.on, f"status of pipeline {self.id}")

    def stages(self):
        """Each stage as a dict, in the order they run."""
        return self.status()["stages"]

    def stage(self, name):
        """Stage `name` as a Job or a Sweep (by its record's folder); None while it has not been
        submitted (waiting, or never to run: stages() says why)."""
        for s in self.stages():
            if s["name"] == name:
                if not s["record"]:
                    return None
                return (Sweep if s["kind"] == "sweep" else Job)(s["record"], self.on)
        raise KeyError(f"pipeline {self.id} has no stage {name!r}")

    def logs(self, rank=None, follow=False, stream=None):
        raise DdpjobError("a pipeline's logs are its stages': pipeline.stage(NAME).logs()")


def job(id, on=None):
    """The job, sweep or pipeline a name or id stands for (as ddpjob status finds it)."""
    done = _run(["status", str(id), "--json"], on)
    if done.returncode != 0:
        raise _fail(done, f"status of {id}")
    doc = json.loads(done.stdout)
    if "stages" in doc:
        return Pipeline(id, on)
    return Sweep(id, on) if "trials" in doc else Job(id, on)


def submit(spec, set=None, on=None, after=None):
    """Submits a spec file's path, or a spec as a dict (written as JSON, which YAML reads, to a
    private file in this folder for the submit, then removed: the record keeps it), with `set`
    overrides ({"train.lr": 0.05}), on cluster `on` (ddpjob cluster add), after jobs `after`
    ("JOB[:ok|any|notok]", or a list of them). A Job, a Sweep for a spec with sweep:, or a
    Pipeline for a file (or dict) with stages: (set and after are then its stages' own)."""
    written = None
    if isinstance(spec, dict):
        fd, written = tempfile.mkstemp(prefix=".ddpjob-spec-", suffix=".yaml", dir=os.getcwd())
        with os.fdopen(fd, "w") as f:
            json.dump(spec, f, indent=1)
        path = written
    else:
        path = os.fspath(spec)
    afters = [after] if isinstance(after, str) else list(after or [])
    args = ["submit", path] + _set_words(set)
    for a in afters:
        args += ["--after", a]
    try:
        done = _run(args, on)
    finally:
        if written:
            os.unlink(written)
    if done.returncode != 0:
        raise _fail(done, f"submit of {path}")
    pipeline = _PIPELINE.search(done.stderr)
    if pipeline:
        return Pipeline(pipeline["record"], on)
    sweep = _SWEEP.search(done.stderr)
    if sweep:
        return Sweep(sweep["name"], on)
    lines = done.stdout.split()
    if not lines:
        raise SubmitError(f"submit of {path} printed no job id", done.returncode, done.stderr)
    return Job(lines[-1], on)
