"""The chaos harness's short run (``benchmarks/chaos/run.py --quick``), as CI runs it.

One round each of the three main faults against a pair of ``xscl serve`` instances
while documents arrive: kill -9 of the primary, a zombie primary (SIGSTOP past its
lease, SIGCONT after the take-over: it must exit fenced), kill -9 of the standby.
Then the final result set is compared with ``xscl.reference``: nothing lost, nothing
committed twice, no round with a note (an unexpected exit code or message).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc"),
]
HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "chaos" / "run.py"


def test_the_short_chaos_run_loses_and_duplicates_nothing(
    java: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("chaos_run", HARNESS)
    assert spec is not None and spec.loader is not None
    chaos = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = chaos  # its dataclasses look their module up
    spec.loader.exec_module(chaos)
    code = chaos.main(["--quick", "--json", "--work", str(tmp_path)])
    outcomes = json.loads(capsys.readouterr().out)
    assert sorted(outcomes) == sorted(chaos.QUICK)
    for fault, outcome in outcomes.items():
        assert len(outcome["seconds"]) == 1, fault
        assert (outcome["lost"], outcome["duplicated"], outcome["notes"]) == (0, 0, []), fault
    assert code == 0
    print({fault: round(o["seconds"][0], 2) for fault, o in outcomes.items()})
