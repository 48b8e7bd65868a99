"""Mode decision, archive choice, replay bookkeeping, tables and the data-source line (no GPU)."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import HOPPER
from gpumm.analyse import tables
from gpumm.archive import reference, replay
from gpumm.profile import session as profile
from gpumm.report import index as report
from gpumm.run import gpu, measure, memory
from gpumm.setup import catalog


def fake_probe(ok, name="NVIDIA H100 80GB HBM3", arch="sm_90"):
    return lambda: gpu.Probe(ok, "" if ok else "CuPy is not installed", name if ok else "", arch if ok else "")


def test_auto_measures_with_a_gpu_and_replays_without():
    d = gpu.decide("auto", "auto", fake_probe(True, arch="sm_89"))
    assert (d.mode, d.arch) == ("measure", "sm_89")
    d = gpu.decide("auto", "auto", fake_probe(False))
    assert (d.mode, d.arch) == ("replay", "sm_90") and "CuPy is not installed" in d.why
    assert gpu.decide("auto", "sm_80", fake_probe(True)).arch == "sm_80"


def test_replay_never_probes_and_measure_insists():
    def boom():
        raise AssertionError("probed")

    assert gpu.decide("replay", "auto", boom).mode == "replay"
    with pytest.raises(RuntimeError, match="no usable CUDA GPU: CuPy is not installed"):
        gpu.decide("measure", "auto", fake_probe(False))


def test_with_no_gpu_the_probe_says_so_before_naming_cupy(monkeypatch):
    """Issue 37: with no GPU, `mode: measure` names the missing GPU first, not only the missing CuPy; with a GPU
    and no CuPy, CuPy alone."""
    from types import SimpleNamespace

    answer = json.dumps({"ok": False, "reason": "CuPy is not installed (ModuleNotFoundError)"})
    monkeypatch.delenv(gpu.FAKE_ENV, raising=False)
    monkeypatch.setattr(gpu.subprocess, "run", lambda *a, **k: SimpleNamespace(stdout=answer + "\n", stderr=""))
    monkeypatch.setattr(gpu, "nvidia_present", lambda: False)
    with pytest.raises(RuntimeError, match=r"no usable CUDA GPU: no NVIDIA GPU on this machine .*; CuPy is not"):
        gpu.decide("measure", "auto")
    monkeypatch.setattr(gpu, "nvidia_present", lambda: True)
    assert gpu.probe().reason == "CuPy is not installed (ModuleNotFoundError)"


def test_slug():
    assert reference.slug("NVIDIA H100 80GB HBM3") == "h100-80gb-hbm3"
    assert reference.slug("NVIDIA H200") == "h200"


FIX = Path(__file__).parents[1] / "fixtures"
GPU = {**HOPPER, "memory_clock_khz": 2619000, "memory_bus_bits": 5120}  # as an H100 records them


def make_archive(root, name, date, variants):
    """A small archive shaped like a real one (synthetic numbers, for the bookkeeping only)."""
    arch = root / name
    for v in variants:
        d = arch / "raw" / v.id
        d.mkdir(parents=True)
        rows = [
            dict(
                variant=v.id,
                family=v.family,
                defines=v.defines_text(),
                kind=v.kind,
                M=64,
                N=64,
                K=64,
                memory_mode="device",
                timed="kernel",
                repeat=i,
                ms=0.01 * (i + 1),
                gflops=1.0,
                max_rel_err=1e-7,
                tolerance=1e-5,
                reference="cpu_f64",
                verified=True,
                status="ok",
                reason="",
            )
            for i in range(3)
        ]
        pd.DataFrame(rows, columns=measure.COLUMNS).to_csv(d / "samples.csv", index=False)
        (d / "meta.json").write_text(json.dumps({"variant": v.id, "digest": v.digest(), "origin": "measured"}))
        if v.is_cuda:
            b = arch / "build" / v.id
            b.mkdir(parents=True)
            res = {
                "variant": v.id,
                "entry": v.entry,
                "arch": "sm_90",
                "registers": 32,
                "stack_bytes": 0,
                "spill_store_bytes": 0,
                "spill_load_bytes": 0,
                "smem_bytes": 2048,
                "barriers": 1,
            }
            (b / "resources.json").write_text(json.dumps(res))
            real = "naive" if v.family == "naive" else "tiled16_unroll1"  # real compiler output
            for ext in ("ptx", "sass"):
                shutil.copy2(FIX / f"{real}_sm90.{ext}", b / f"kernel.{ext}")
    (arch / "raw").mkdir(parents=True, exist_ok=True)
    (arch / "raw" / "provenance.json").write_text(
        json.dumps({"date": date, "gpu": GPU, "git_commit": "abc123", "data_source": {"mode": "measure"}})
    )
    reference.seal(arch)  # as `python -m gpumm archive` leaves it: an archive is used only with its manifest
    return arch


def test_choose_picks_newest_or_named(tmp_path):
    with pytest.raises(reference.ArchiveError, match="no archived run"):
        reference.choose("auto", tmp_path)
    make_archive(tmp_path, "old", "2025-01-01", [])
    make_archive(tmp_path, "new", "2026-01-01", [])
    assert reference.choose("auto", tmp_path).name == "new"
    assert reference.choose("old", tmp_path).name == "old"
    with pytest.raises(reference.ArchiveError, match="allowed: auto, old, new"):
        reference.choose("h100", tmp_path)


def test_replay_copies_flags_stale_and_lists_missing(tmp_path, monkeypatch):
    naive, t16, t8 = (
        catalog.expand({"naive": {}, "tiled": {"TILE": [16, 8]}})[0:1]
        + catalog.expand({"tiled": {"TILE": [16, 8]}})[::-1]
    )
    archive = make_archive(tmp_path / "ref", "h200", "2026-11-22", [naive, t16])
    # the archived tile-16 run was made from another source: rewrite its digest
    meta = archive / "raw" / t16.id / "meta.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "digest": "0000"}))
    reference.seal(archive)
    results = tmp_path / "results"
    assert replay.variant(naive, archive, results)["stale"] is False
    assert replay.variant(t16, archive, results)["stale"] is True
    gone = replay.variant(t8, archive, results)
    assert gone["origin"] == "not measured"
    df = pd.read_csv(results / "raw" / t8.id / "samples.csv")
    assert list(df.status) == ["not measured"] and df.ms.isna().all()  # no number is invented
    for v in (naive, t16, t8):
        replay.resources(v, archive, results)
    assert json.loads((results / "build" / t8.id / "resources.json").read_text())["status"] == "not measured"
    prov = replay.provenance(archive, "no GPU here", {v.id: v.digest() for v in (naive, t16, t8)}, results)
    assert prov["data_source"]["mode"] == "replay" and "h200" in prov["data_source"]["archive"]
    for name in ("coalescing", "bandwidth", "overhead", "hierarchy"):  # not in this archive: no numbers
        assert "not in the archive" in replay.study(name, archive, results)
    assert pd.read_csv(results / "raw" / "bandwidth" / "samples.csv").status.tolist() == ["not measured"]
    monkeypatch.chdir(tmp_path)
    tables.collect([naive, t16, t8], results, tmp_path / "tables")
    variants = pd.read_csv(tmp_path / "tables" / "variants.csv").set_index("variant")
    assert variants.loc[t16.id, "stale"] and not variants.loc[naive.id, "stale"]
    assert variants.loc[t8.id, "origin"] == "not measured"
    resources = pd.read_csv(tmp_path / "tables" / "resources.csv").set_index("variant")
    assert resources.loc[naive.id, "occupancy"] == 1.0 and resources.loc[naive.id, "threads_per_block"] == 256
    assert resources.loc[t8.id, "status"] == "not measured"
    estimate = pd.read_csv(tmp_path / "tables" / "estimate.csv")
    assert set(estimate.variant) == {naive.id, t16.id} and set(estimate.level) == {"ptx", "sass"}
    summary = pd.read_csv(tmp_path / "tables" / "summary.csv").set_index("variant")
    assert summary.loc[naive.id, "median_ms"] == pytest.approx(0.02) and summary.loc[naive.id, "samples"] == 3
    assert summary.loc[t8.id, "status"] == "not measured"
    assert pd.read_csv(tmp_path / "tables" / "coalescing_summary.csv").status.tolist() == ["not measured"]


def test_summary_keeps_failures_and_skips_with_reasons():
    rows = [
        dict(
            variant="a",
            family="a",
            defines="",
            kind="cuda",
            M=8,
            N=8,
            K=8,
            memory_mode="device",
            timed="kernel",
            status="failed",
            reason="max relative error 1 > tolerance",
        ),
        dict(
            variant="a",
            family="a",
            defines="",
            kind="cuda",
            M=16,
            N=16,
            K=16,
            memory_mode="device",
            timed="kernel",
            status="skipped",
            reason="predicted 99 s > budget",
        ),
    ]
    s = tables.summarise(pd.DataFrame(rows, columns=measure.COLUMNS))
    assert list(s.status) == ["failed", "skipped"] and s.gflops.isna().all()
    assert "budget" in s.reason.iloc[1]


def test_banner_names_the_source():
    prov = {"gpu": {"name": "NVIDIA H200"}, "date": "2026-11-22T10:00:00", "git_commit": "0123456789abcdef"}
    measured = report.banner({**prov, "data_source": {"mode": "measure"}})
    assert measured.startswith("Data source: MEASURED") and "NVIDIA H200" in measured and "0123456789ab" in measured
    replayed = report.banner({**prov, "data_source": {"mode": "replay", "archive": "data/reference/h200", "why": "x"}})
    assert "REPLAYED" in replayed and "data/reference/h200" in replayed and "2026-11-22" in replayed


def test_profiler_problems_are_one_clear_reason(tmp_path, monkeypatch):
    assert "ERR_NVGPUCTRPERM" in profile.diagnose("==ERROR== ERR_NVGPUCTRPERM - The user does not have", 1, [])
    assert "no kernel" in profile.diagnose("==WARNING== No kernels were profiled.", 0, [])
    assert "status 3" in profile.diagnose("==ERROR== boom", 3, [])
    assert profile.diagnose("", 0, [{"metric": "x"}]) == ""
    monkeypatch.setattr(profile, "find_ncu", lambda: None)
    rows, reason, log = profile.run_ncu(["true"], "regex:x", ["gpu__time_duration.sum"], tmp_path)
    assert rows == [] and "not found" in reason


def test_unknown_memory_mode_is_refused():
    assert memory.get("device").info.name == "device"
    with pytest.raises(ValueError, match="allowed: device"):
        memory.get("unified")


def test_a_replay_step_writes_what_pandas_would_without_importing_it(tmp_path):
    """A replay step starts once per variant: it copies and writes placeholders without pandas, numpy or the
    schema checker, and its placeholders are the files the measuring modules write."""
    import subprocess
    import sys

    naive, tile8 = catalog.expand({"naive": {}, "tiled": {"TILE": [8]}})
    archive = make_archive(tmp_path / "ref", "h200", "2026-11-22", [naive])
    (archive / "build" / naive.id / "kernel.sass").unlink()  # the build copied, but for the SASS
    results = tmp_path / "results"
    code = (
        "import sys\nfrom pathlib import Path\nfrom gpumm.archive import replay\nfrom gpumm.setup import catalog\n"
        f"archive, results = Path({str(archive)!r}), Path({str(results)!r})\n"
        f"for vid in ({naive.id!r}, {tile8.id!r}):\n"
        "    v = catalog.from_id(vid)\n"
        "    replay.variant(v, archive, results)\n"
        "    replay.resources(v, archive, results)\n"
        "print(sorted(m for m in ('pandas', 'numpy', 'jsonschema', 'cupy') if m in sys.modules))\n"
    )
    catalog.load()  # as Snakemake does before it starts its jobs
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr

    # copied as archived
    for f in ("samples.csv",):
        assert (results / "raw" / naive.id / f).read_bytes() == (archive / "raw" / naive.id / f).read_bytes()
    assert (results / "build" / naive.id / "kernel.ptx").read_bytes() == (
        archive / "build" / naive.id / "kernel.ptx"
    ).read_bytes()
    # the placeholders, byte for byte as pandas writes the frames the measuring modules make
    reason = f"not measured: {tile8.id} is not in the archived run h200"
    row = dict(variant=tile8.id, family="tiled", defines="TILE=8", kind="cuda", status="not measured", reason=reason)
    expected = pd.DataFrame([row], columns=measure.COLUMNS).to_csv(index=False)
    assert (results / "raw" / tile8.id / "samples.csv").read_text() == expected
    missing = {"variant": tile8.id, "M": 0, "N": 0, "K": 0, "status": "missing", "reason": reason}
    expected = pd.DataFrame([missing], columns=profile.COLUMNS).to_csv(index=False)
    assert (results / "raw" / tile8.id / "profile.csv").read_text() == expected
    no_profile = pd.read_csv(results / "raw" / naive.id / "profile.csv")
    assert no_profile.status.tolist() == ["missing"] and "holds no profile of naive" in no_profile.reason[0]
    assert json.loads((results / "raw" / tile8.id / "meta.json").read_text())["origin"] == "not measured"
    assert "not in the archived run h200" in (results / "build" / naive.id / "kernel.sass").read_text()
    assert json.loads((results / "build" / tile8.id / "resources.json").read_text())["status"] == "not measured"
    assert not list(results.rglob("*.tmp"))


def test_archives_keep_ptx_and_sass_gzipped_and_replay_restores_the_same_bytes(tmp_path):
    from gpumm.archive import reference

    archive = tmp_path / "ref" / "gpu"
    (archive / "raw").mkdir(parents=True)
    (archive / "raw" / "provenance.json").write_text("{}")
    build = archive / "build" / "interior_x"
    build.mkdir(parents=True)
    sass = "".join(f"/*{i:04x}*/ FFMA R{i % 200}, R1, R2, R{i % 200} ;\n" for i in range(5000))
    (build / "kernel.sass").write_text(sass)
    (build / "resources.json").write_text('{"registers": 227}')
    assert reference.pack(archive) == 1
    assert not (build / "kernel.sass").exists() and (build / "kernel.sass.gz").stat().st_size < len(sass) / 5
    first = (build / "kernel.sass.gz").read_bytes()
    (tmp_path / "x").write_text(sass)
    reference.pack_file(tmp_path / "x", tmp_path / "x.gz")
    assert (tmp_path / "x.gz").read_bytes() == first  # the same bytes for the same input: no name, no time
    out = tmp_path / "results"
    assert replay._copy_or_note(build / "kernel.sass", out / "kernel.sass", archive)
    assert (out / "kernel.sass").read_text() == sass
    assert replay._copy_or_note(build / "resources.json", out / "resources.json", archive)  # unpacked files as before
    assert not replay._copy_or_note(build / "kernel.ptx", out / "kernel.ptx", archive)  # neither: a note, no numbers
    assert "not in the archived run" in (out / "kernel.ptx").read_text()


def test_an_archive_keeps_a_manifest_and_a_damaged_file_stops_its_replay_naming_it(tmp_path):
    """Every file of an archive as written (MANIFEST.json): a file cut short, edited or lost since stops a replay
    of that archive with one line naming it; packing refuses to seal a damaged archive."""
    (naive,) = catalog.expand({"naive": {}})
    archive = make_archive(tmp_path / "ref", "gpu", "2026-11-24", [naive])
    reference.seal(archive)
    reference.check(archive)  # as written
    samples = archive / "raw" / naive.id / "samples.csv"
    good = samples.read_bytes()
    samples.write_bytes(good[:100])
    with pytest.raises(
        reference.ArchiveError, match=r"archive gpu: .*raw/naive/samples\.csv: 0 lines, 100 bytes where 4 lines"
    ):
        reference.check(archive)
    with pytest.raises(reference.ArchiveError, match="samples.csv: 0 lines"):
        replay.variant(naive, archive, tmp_path / "results")
    assert not (tmp_path / "results" / "raw" / naive.id / "samples.csv").exists()  # nothing copied
    with pytest.raises(reference.ArchiveError, match="samples.csv"):
        reference.pack(archive)
    samples.write_bytes(good)
    (archive / "raw" / naive.id / "meta.json").unlink()
    with pytest.raises(reference.ArchiveError, match=r"meta\.json: missing"):
        reference.check(archive)


def test_a_damaged_archive_that_is_not_replayed_is_left_out(tmp_path):
    root = tmp_path / "ref"
    make_archive(root, "h200", "2026-11-23", [])
    bad = root / "h100-race" / "raw"
    bad.mkdir(parents=True)
    (bad / "provenance.json").write_text("")
    assert [p.name for p in reference.available(root)] == ["h200"]
    assert "h100-race/raw/provenance.json: cannot be read (JSONDecodeError" in reference.damaged(root)["h100-race"]
    assert reference.choose("h200", root).name == "h200"
    # auto cannot date it, so cannot say it would not have picked it: it names it rather than move to h200
    with pytest.raises(reference.ArchiveError, match=r"'auto': archive h100-race cannot be dated .*replay_from: h200"):
        reference.choose("auto", root)
    with pytest.raises(reference.ArchiveError, match=r"replay_from = 'h100-race': .*provenance\.json: cannot be"):
        reference.choose("h100-race", root)
    assert [r["archive"] for r in reference.costs(root)] == []  # no run.json here; and no crash on the damaged one


def test_the_archived_runs_match_their_manifests():
    for archive in reference.available():
        assert (archive / reference.MANIFEST).is_file(), archive
        reference.check(archive)


def test_collect_refuses_samples_that_changed_since_their_step(tmp_path, monkeypatch):
    from gpumm.setup import manifest

    (naive,) = catalog.expand({"naive": {}})
    archive = make_archive(tmp_path / "ref", "gpu", "2026-11-24", [naive])
    results = tmp_path / "results"
    replay.variant(naive, archive, results)
    samples = results / "raw" / naive.id / "samples.csv"
    assert manifest.recorded(samples.parent / "meta.json") == []  # the copy is recorded as copied
    samples.write_bytes(samples.read_bytes()[:200])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        manifest.Damaged, match=r"raw/naive/samples\.csv: .* where its step wrote .*run snakemake again"
    ):
        tables.collect([naive], results, tmp_path / "tables")
    assert not (tmp_path / "tables" / "summary.csv").exists()


def test_an_archive_keeps_every_file_a_step_says_it_wrote(tmp_path):
    """KEEP_RAW and the files a step's meta.json lists: the model step's ceiling.csv is kept though KEEP_RAW does
    not name it; a file no list names (scratch.bin) is not; a step whose meta.json lists no files keeps KEEP_RAW's."""
    import json

    from gpumm.archive import reference

    results = tmp_path / "results"
    step = results / "raw" / "model"
    step.mkdir(parents=True)
    for name in ("samples.csv", "ceiling.csv", "scratch.bin"):
        (step / name).write_text("x\n")
    (step / "meta.json").write_text(json.dumps({"files": {"samples.csv": {}, "ceiling.csv": {}}}))
    older = results / "raw" / "other"
    older.mkdir()
    (older / "samples.csv").write_text("x\n")
    (older / "extra.csv").write_text("x\n")
    (older / "meta.json").write_text(json.dumps({"step": "older"}))
    (results / "raw" / "provenance.json").write_text(json.dumps({"data_source": {"mode": "measure"}}))
    dest = reference.write(results, tmp_path / "ref", name="gpu")
    assert sorted(f.name for f in (dest / "raw" / "model").iterdir()) == ["ceiling.csv", "meta.json", "samples.csv"]
    assert sorted(f.name for f in (dest / "raw" / "other").iterdir()) == ["meta.json", "samples.csv"]
