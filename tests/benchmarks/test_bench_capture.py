"""The capture benchmark's profile names functions that run: a renamed or moved function would
otherwise print a stage of zeros (as every stage did after the layer packages moved them)."""

from __future__ import annotations

from benchmarks import bench_capture


def test_every_profiled_stage_and_operation_names_a_function_that_runs() -> None:
    stats, wall, _ = bench_capture.profiled(60)
    assert wall > 0
    for stages in (bench_capture.PROFILE_STAGES, bench_capture.PROFILE_OPERATIONS):
        seconds = bench_capture.stage_seconds(stats, stages)
        assert [label for label, t in seconds.items() if t <= 0] == []


def test_the_profile_table_puts_the_capture_in_its_record_row() -> None:
    rows = {line[:54].strip(): line[54:].split() for line in bench_capture.profile(60).splitlines()[3:]}
    cum, per_episode, share = rows["record, total"]
    assert float(cum) >= 0 and int(per_episode) > 0 and share.endswith("%") and int(share[:-1]) > 0
