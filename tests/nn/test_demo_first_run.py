"""Issue 44: the demo as a newcomer runs it (README's command, small sizes): it saves the model
where it says, ends with what to do next, and the README's claims about it hold."""

import re
import subprocess
import sys
from pathlib import Path

from torchic import demo

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_demo_command_saves_the_model_and_says_what_next(backend, tmp_path, monkeypatch,
                                                                capsys):
    assert "pip install -e . && python -m torchic demo" in README
    monkeypatch.chdir(tmp_path)
    rc = demo.main(["--backend", backend, "--steps", "20", "--hidden", "16", "--samples", "3",
                    "--no-progress", "--no-plot"])
    assert rc == 0
    text = capsys.readouterr().out
    ckpt = Path(demo.DEMO_OUT) / "makemore.safetensors"
    assert (tmp_path / ckpt).is_file()
    assert f"checkpoint: {ckpt} (in {tmp_path / demo.DEMO_OUT})" in text
    tail = text.split("\nnext:\n")[1]
    for needle in (f"--sample-only {ckpt}", "--data names.txt", "--out DIR",
                   "python -m torchic serve"):
        assert needle in tail, (needle, tail)
    # the printed next step works
    rc = demo.main(["--backend", backend, "--sample-only", str(ckpt), "--samples", "2"])
    assert rc == 0 and "2 samples:" in capsys.readouterr().out
    # the lines README quotes from the demo's output are what it prints
    for quoted in re.findall(r"prints `([^`]+)`", README):
        assert quoted.split("{")[0] in text, quoted


def test_readme_time_claim_is_not_a_minute():
    assert "for about\na minute" not in README and "about a minute" not in README


def test_makemore_help_lists_what_the_readme_uses():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "makemore.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for flag in set(re.findall(r"examples/makemore\.py[^`\n]*?(--[a-z-]+)", README)):
        assert flag in proc.stdout, flag
    assert "--ddp" in proc.stdout


def test_quickstart_states_the_real_default_backend():
    src = (ROOT / "examples" / "quickstart.py").read_text()
    assert "(default: workers)" not in src and "simd" in src
