"""Snakemake's SLURM executor, for real: a one-node SLURM started here runs build and replay jobs.

Needs root, Debian's slurm-wlm and munge (CI installs them: .ci/run) and
snakemake-executor-plugin-slurm (the test extra). Elsewhere it skips, saying
which of those is missing. The cluster has no accounting database, so job
states come from squeue (the profile documents the setting).
"""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# one cluster a session, one /etc/slurm/slurm.conf: with pytest-xdist these tests run on one worker
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.xdist_group("slurm")]

CONF = Path("/etc/slurm/slurm.conf")  # where srun inside a job looks (the executor drops SLURM_* variables)
MARK = "# written by gpumm's tests/pipeline/test_slurm.py"
DAEMONS = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel"]


def _run(*cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def _meminfo_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 2048


def _pid_files(conf_text: str) -> list[Path]:
    """The daemons' pid files a slurm.conf names (SlurmctldPidFile, SlurmdPidFile)."""
    keys = ("SlurmctldPidFile=", "SlurmdPidFile=")
    return [Path(line.split("=", 1)[1].strip()) for line in conf_text.splitlines() if line.startswith(keys)]


def _stop_leftovers(conf_text: str) -> None:
    """Stop the daemons of an earlier test cluster whose session was killed before its teardown (its slurm.conf
    still ours): a new cluster would otherwise meet the old daemons on its ports. A pid file's process is stopped
    only if it is still a slurmctld or slurmd (a pid may have been given to another process since)."""
    stopped = []
    for pid_file in _pid_files(conf_text):
        try:
            pid = int(pid_file.read_text().strip())
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except (OSError, ValueError):
            continue
        if name in ("slurmctld", "slurmd"):
            subprocess.run(["kill", str(pid)], check=False, capture_output=True)
            stopped.append(pid)
    deadline = time.time() + 10
    while stopped and time.time() < deadline and any(Path(f"/proc/{p}").exists() for p in stopped):
        time.sleep(0.2)


def test_pid_files_are_read_from_our_conf():
    conf = f"{MARK}\nSlurmctldPidFile=/tmp/a/slurmctld.pid\nSlurmdPidFile=/tmp/a/slurmd.pid\nSlurmUser=root\n"
    assert _pid_files(conf) == [Path("/tmp/a/slurmctld.pid"), Path("/tmp/a/slurmd.pid")]


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A one-node SLURM on this machine, stopped (and its configuration removed) afterwards."""
    missing = [d for d in DAEMONS if not shutil.which(d) and not Path(f"/usr/sbin/{d}").exists()]
    if missing:
        pytest.skip(f"SLURM cannot be started: {', '.join(missing)} not installed (apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("SLURM cannot be started: its daemons need root")
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        pytest.skip("snakemake-executor-plugin-slurm is not installed (pip install -e '.[test]')")
    if CONF.exists() and MARK not in CONF.read_text():
        pytest.skip(f"{CONF} exists and is not ours: not starting a test cluster over a real one")
    if CONF.exists():  # ours, left by a session killed before its teardown
        _stop_leftovers(CONF.read_text())
    work = tmp_path_factory.mktemp("slurm")
    for d in ("state", "spool", "log"):
        (work / d).mkdir()
    host = socket.gethostname().split(".")[0]
    CONF.parent.mkdir(parents=True, exist_ok=True)
    CONF.write_text(
        f"""{MARK}
ClusterName=gpumm-test
SlurmctldHost={host}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/log/slurmctld.log
SlurmdLogFile={work}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=3600
ReturnToService=2
NodeName={host} CPUs={os.cpu_count()} RealMemory={_meminfo_mb() // 2} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""
    )
    if _run("munge", "-n").returncode != 0:
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        _run("/usr/sbin/munged", "--force")
    for daemon in ("slurmctld", "slurmd"):
        _run(f"/usr/sbin/{daemon}")
    deadline = time.time() + 60
    state = ""
    while time.time() < deadline:
        state = _run("sinfo", "-h", "-o", "%T").stdout.strip()
        if state == "idle":
            break
        time.sleep(1)
    try:
        if state != "idle":
            log = (
                (work / "log" / "slurmctld.log").read_text()[-1500:]
                if (work / "log" / "slurmctld.log").exists()
                else ""
            )
            pytest.skip(f"SLURM did not start (node state {state or 'unknown'!r}): {log}")
        yield host
    finally:
        _run("scancel", "--user=root")
        for daemon in ("slurmd", "slurmctld"):
            pid = work / f"{daemon}.pid"
            if pid.exists():
                subprocess.run(["kill", pid.read_text().strip()], check=False)
        if CONF.exists() and MARK in CONF.read_text():
            CONF.unlink()


def _snakemake(tree, target, *config, env=None):
    """``snakemake TARGET`` through the executor (the profile, plus what this test cluster needs), then --config."""
    cmd = [sys.executable, "-m", "snakemake", target, "--workflow-profile", "workflow/profiles/slurm"]
    cmd += ["--slurm-status-command", "squeue", "--slurm-no-account", "--slurm-init-seconds-before-status-checks", "1"]
    cmd += ["--slurm-keep-successful-logs"]  # the evidence that a job ran through SLURM
    cmd += ["--default-resources", "slurm_partition=debug", "runtime=10", "mem_mb=500", "--config", *config]
    return subprocess.run(cmd, cwd=tree, capture_output=True, text=True, timeout=900, env={**os.environ, **(env or {})})


def _copy(tree, dest):
    shutil.copytree(tree, dest, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    return dest


def test_replay_jobs_run_through_the_slurm_executor(slurm, tree, tmp_path):
    t = _copy(tree, tmp_path / "replay")
    out = _snakemake(t, "results/tables/summary.csv", "mode=replay", "only=[naive,cublas]")
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    logs = t / ".snakemake" / "slurm_logs"
    assert list((logs / "rule_replay_variant").glob("*/*.log")) or list((logs / "rule_replay_variant").glob("*.log"))
    summary = (t / "results" / "tables" / "summary.csv").read_text()
    assert "naive" in summary and "cublas" in summary
    # the report's steps stayed local: no SLURM log for collect
    assert not (logs / "rule_collect").exists()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH: a build job cannot run here")
def test_a_build_job_runs_through_the_slurm_executor(slurm, tree, tmp_path):
    t = _copy(tree, tmp_path / "build")
    pretend = '{"ok": true, "reason": "", "name": "pretend", "arch": "sm_90", "l2_bytes": 52428800}'
    out = _snakemake(
        t,
        "results/build/naive/kernel.cubin",
        "--config",
        "mode=measure",
        "only=[naive]",
        env={"GPUMM_FAKE_GPU": pretend},
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert (t / "results" / "build" / "naive" / "kernel.cubin").stat().st_size > 0
    assert (t / ".snakemake" / "slurm_logs" / "rule_build").is_dir()
    jobs = subprocess.run(["squeue", "--states=all", "-h", "-o", "%j %T"], capture_output=True, text=True).stdout
    assert "COMPLETED" in jobs, jobs
