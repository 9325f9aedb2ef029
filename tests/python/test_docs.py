"""docs/python.md's examples run as the page says: its ```python blocks, in order, are one program,
run twice in fresh processes with one cache folder (the first compiles, the second reads the disk)."""

import os
import pathlib
import subprocess
import sys

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def python_blocks(text):
    blocks, block = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if block is None and line.strip() == "```python":
                block = []
            elif block is not None:
                blocks.append("\n".join(block))
                block = None
            continue
        if block is not None:
            block.append(line)
    return blocks


def test_the_page_runs_as_documented(tmp_path):
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) >= 6, "are the examples still there?"
    script = tmp_path / "python_md.py"
    script.write_text("\n\n".join(blocks))
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(sys.path))
    for expected in ("compiled", "disk"):
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
        print(run.stdout, run.stderr)
        assert run.returncode == 0
        assert f"saxpy for sm_90 from {expected} in a Cache of its own" in run.stdout
        # kjit.lookup after kjit.get: a compile is kept in memory, a disk hit from its second lookup on.
        assert f"saxpy for sm_90 from {'memory' if expected == 'compiled' else 'disk'}:" in run.stdout
        assert "[(0, 0, 4), (1, 8, 8), (2, 16, 8), (3, 24, 4)] 28" in run.stdout
        assert "compile error in broken.cu for sm_90" in run.stdout
        assert "arch error:" in run.stdout
